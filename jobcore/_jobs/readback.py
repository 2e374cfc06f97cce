"""Bounds on what a job's stored status gives back to the controller.

The controller writes a job's status, but so can whoever RBAC lets write `*/status`: an admin,
a user granted it, another tool. A value the controller never writes (a retry delay of 10^15 s,
a time in year 9999, a negative count) would otherwise reach the controller's arithmetic on
every reconcile of that job. `bounded` clamps each such value as the status is read: counts
between 0 and MAX_COUNT, the retry delay between 1 s and MAX_RETRY_DELAY_SECONDS, and times
between the job's creation and now, each with CLOCK_SKEW to spare. A time that does not parse
is left as it is: `parse_time` reads it as none. The next status written carries the clamped
values.
"""

from __future__ import annotations

from jobcore._jobs.models import Aggregate
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import TaskStatus
from jobcore._jobs.status import parse_time
from jobcore._jobs.status import stamp

MAX_COUNT = 2**31 - 1
"""The largest count read back (restarts, pods by phase): beyond any job's, and what the
controller adds to it stays within the API server's 64-bit integers."""
MAX_RETRY_DELAY_SECONDS = 86_400
"""The longest retry delay read back, and so the longest a `RetryBackoff` may have: a day."""
CLOCK_SKEW = 300.0
"""Seconds a stored time may lie after this process' clock, or before the job's creation, and
still be read as written: another replica's clock, or the API server's, may differ that much."""


def bounded(status: JobStatus, *, created: str | None, now: float) -> JobStatus:
    """`status` with every value the job layer reads back clamped into what it could have
    written for a job created at `created` (an API timestamp), read at `now` (a POSIX time)."""
    start = parse_time(created)
    window = _Window(start.timestamp() if start is not None else 0.0, now)
    delay = status.retry_delay_seconds
    return status.model_copy(
        update={
            "conditions": [
                c.model_copy(update={"last_transition_time": window.clamp(c.last_transition_time)})
                for c in status.conditions
            ],
            "tasks": [_task(task) for task in status.tasks],
            "aggregate": _aggregate(status.aggregate),
            "restarts": None if status.restarts is None else _count(status.restarts),
            "last_retry_time": window.clamp(status.last_retry_time),
            "retry_delay_seconds": (
                None if delay is None else min(max(delay, 1), MAX_RETRY_DELAY_SECONDS)
            ),
        }
    )


class _Window:
    """The times a stored timestamp may say: from the job's creation to now, give or take
    CLOCK_SKEW."""

    def __init__(self, earliest: float, now: float) -> None:
        self._earliest = earliest
        self._now = now

    def clamp(self, timestamp: str | None) -> str | None:
        """`timestamp`, or the creation or now when it lies too far before or after."""
        moment = parse_time(timestamp)
        if moment is None:
            return timestamp
        seconds = moment.timestamp()
        if seconds < self._earliest - CLOCK_SKEW:
            return stamp(self._earliest)
        if seconds > self._now + CLOCK_SKEW:
            return stamp(self._now)
        return timestamp


def _count(value: int) -> int:
    return min(max(value, 0), MAX_COUNT)


def _aggregate(aggregate: Aggregate) -> Aggregate:
    counts = {name: _count(getattr(aggregate, name)) for name in Aggregate.model_fields}
    return aggregate.model_copy(update=counts)


def _task(task: TaskStatus) -> TaskStatus:
    aggregate = None if task.aggregate is None else _aggregate(task.aggregate)
    return task.model_copy(
        update={"restart_count": _count(task.restart_count), "aggregate": aggregate}
    )
