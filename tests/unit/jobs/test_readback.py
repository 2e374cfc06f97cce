"""Values read back from a stored status are clamped into what the controller could write, so
a hostile `*/status` writer cannot make the arithmetic on them fail or run away."""

from __future__ import annotations

import pytest

from jobcore._jobs.readback import MAX_COUNT
from jobcore._jobs.readback import MAX_RETRY_DELAY_SECONDS
from jobcore._jobs.readback import bounded
from jobcore._jobs.retries import retry_note
from jobcore._jobs.retries import retry_wait
from jobcore._jobs.status import Lifecycle
from jobcore.jobs import JobStatus
from jobcore.jobs import RetryBackoff
from jobcore.jobs import parse_time
from tests.unit.jobs.test_jobpolicy import NOW
from tests.unit.jobs.test_jobpolicy import at

CREATED = at(0)
INT64_MAX = 2**63 - 1


def read(stored: dict[str, object]) -> JobStatus:
    return bounded(JobStatus.model_validate(stored), created=CREATED, now=NOW)


def test_counts_are_clamped_between_zero_and_the_largest_count() -> None:
    status = read(
        {
            "restarts": INT64_MAX,
            "aggregate": {"running": -1, "failed": INT64_MAX},
            "tasks": [
                {"type": "worker", "restartCount": -7, "aggregate": {"succeeded": INT64_MAX}}
            ],
        }
    )
    assert status.restarts == MAX_COUNT
    assert (status.aggregate.running, status.aggregate.failed) == (0, MAX_COUNT)
    (task,) = status.tasks
    assert task.restart_count == 0
    assert task.aggregate is not None and task.aggregate.succeeded == MAX_COUNT
    assert read({"restarts": -3}).restarts == 0
    assert read({}).restarts is None


def test_a_retry_delay_is_clamped_between_a_second_and_a_day() -> None:
    assert read({"retryDelaySeconds": 10**15}).retry_delay_seconds == MAX_RETRY_DELAY_SECONDS
    assert read({"retryDelaySeconds": -5}).retry_delay_seconds == 1
    assert read({"retryDelaySeconds": 40}).retry_delay_seconds == 40


@pytest.mark.parametrize(
    ("stored", "read_as"),
    [
        ("9999-12-31T23:59:59Z", at(100)),  # after now: now
        ("0001-01-01T00:00:00Z", at(0)),  # before the job was created: its creation
        (at(-200), at(-200)),  # within the clock skew allowed
        (at(350), at(350)),
        ("NaN", "NaN"),  # unreadable: every reader takes it as none
    ],
)
def test_times_are_clamped_between_the_jobs_creation_and_now(stored: str, read_as: str) -> None:
    status = read(
        {
            "lastRetryTime": stored,
            "conditions": [{"type": "Running", "status": "True", "lastTransitionTime": stored}],
        }
    )
    assert status.last_retry_time == read_as
    assert status.conditions[0].last_transition_time == read_as


@pytest.mark.parametrize("retried", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", at(95)])
def test_a_hostile_retry_waits_at_most_a_day_and_says_when(retried: str) -> None:
    status = read({"lastRetryTime": retried, "retryDelaySeconds": INT64_MAX})
    lifecycle = Lifecycle(retried_at=status.last_retry_time, retry_delay=status.retry_delay_seconds)
    wait = retry_wait(lifecycle, NOW)
    assert wait is None or wait <= MAX_RETRY_DELAY_SECONDS
    assert retry_note(lifecycle).startswith(f"in {MAX_RETRY_DELAY_SECONDS} s, at ")


def test_a_backoff_waits_a_day_at_most() -> None:
    RetryBackoff(initial=10, maximum=MAX_RETRY_DELAY_SECONDS)
    with pytest.raises(ValueError, match="maximum <= 86400"):
        RetryBackoff(initial=10, maximum=MAX_RETRY_DELAY_SECONDS + 1)


def test_a_time_without_a_zone_is_read_in_utc() -> None:
    assert parse_time("2026-11-21T10:00:00") == parse_time("2026-11-21T10:00:00Z")
