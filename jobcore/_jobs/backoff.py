"""The retry backoff: how long a job waits to create its pods again after a failure.

A restart (the whole job recreated under `backoffLimit`) and a replacement (an ended pod that
the kind drops to create anew, as an elastic HorovodJob does) are retries. As a Kubernetes Job
does, the controller waits before each: `initial` seconds after the first, twice as long after
each retry in a row, at most `maximum`; once the job ran `maximum` seconds since its pods came
back, the next retry waits `initial` again. The status records the last retry (its time and
delay: `lastRetryTime`, `retryDelaySeconds`), so a restarted controller keeps to it.
"""

from __future__ import annotations

import dataclasses

from jobcore._jobs.readback import MAX_RETRY_DELAY_SECONDS
from jobcore._jobs.status import Lifecycle
from jobcore._jobs.status import parse_time
from jobcore._jobs.status import stamp

INITIAL_SECONDS = 10
"""The first retry's delay, as a Kubernetes Job's."""
MAXIMUM_SECONDS = 360
"""The longest delay, as a Kubernetes Job's (6 minutes)."""


@dataclasses.dataclass(frozen=True, slots=True)
class RetryBackoff:
    """The delays between a job's retries, in whole seconds: `initial`, doubling, `maximum`."""

    initial: int = INITIAL_SECONDS
    maximum: int = MAXIMUM_SECONDS

    def __post_init__(self) -> None:
        if not 1 <= self.initial <= self.maximum <= MAX_RETRY_DELAY_SECONDS:
            raise ValueError(
                f"a retry backoff needs 1 <= initial <= maximum <= {MAX_RETRY_DELAY_SECONDS} "
                f"seconds, got {self.initial} and {self.maximum}"
            )

    def delay(self, lifecycle: Lifecycle, now: float) -> int:
        """The delay of a retry at `now`, after the job's last one (if any)."""
        due = retry_due(lifecycle)
        if due is None or lifecycle.retry_delay is None or now - due >= self.maximum:
            return self.initial
        return min(lifecycle.retry_delay * 2, self.maximum)

    def retry(self, lifecycle: Lifecycle, now: float) -> Lifecycle:
        """`lifecycle` with a retry at `now` recorded: the status written from it keeps it."""
        return dataclasses.replace(
            lifecycle, retried_at=stamp(now), retry_delay=self.delay(lifecycle, now)
        )


RETRY_BACKOFF = RetryBackoff()
"""The default: 10 s, doubling, at most 6 minutes, as a Kubernetes Job's."""


def retry_due(lifecycle: Lifecycle) -> float | None:
    """When the last retry lets the pods be created again (a POSIX time), if one was made."""
    moment = parse_time(lifecycle.retried_at)
    if moment is None or lifecycle.retry_delay is None:
        return None
    return moment.timestamp() + lifecycle.retry_delay


def retry_wait(lifecycle: Lifecycle, now: float) -> float | None:
    """Seconds until the job may create pods again after its last retry; None if it may now."""
    due = retry_due(lifecycle)
    return None if due is None or due <= now else due - now


def retry_note(lifecycle: Lifecycle) -> str:
    """When the pods are created again, for a message: `in 20 s, at 2026-11-21T10:00:20Z`."""
    due = retry_due(lifecycle)
    return "" if due is None else f"in {lifecycle.retry_delay} s, at {stamp(due)}"
