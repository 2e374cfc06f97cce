"""The retry backoff on a fixed clock: delays, their reset, the wait, and what holds pods back."""

from __future__ import annotations

import pytest

from jobcore._jobs.retries import RESTARTING
from jobcore._jobs.retries import RETRY_BACKOFF
from jobcore._jobs.retries import Verdict
from jobcore._jobs.retries import judge
from jobcore._jobs.retries import noting_retry
from jobcore._jobs.retries import replace_pods
from jobcore._jobs.retries import retry_hold
from jobcore._jobs.retries import retry_note
from jobcore._jobs.retries import retry_wait
from jobcore._jobs.status import Lifecycle
from jobcore.jobs import JobStatus
from jobcore.jobs import Outcome
from jobcore.jobs import RetryBackoff
from tests.unit.jobs.test_jobpolicy import NOW
from tests.unit.jobs.test_jobpolicy import T0
from tests.unit.jobs.test_jobpolicy import at

RUNNING = Outcome("running", "Running", "2 of 3 worker(s) Ready.")


def retried_at(seconds: float, delay: int) -> Lifecycle:
    return Lifecycle(retried_at=at(seconds), retry_delay=delay)


def test_delays_double_from_ten_seconds_to_six_minutes_as_a_kubernetes_jobs() -> None:
    lifecycle, delays = Lifecycle(), []
    for _ in range(8):
        lifecycle = RETRY_BACKOFF.retry(lifecycle, NOW)
        delays.append(lifecycle.retry_delay)
    assert delays == [10, 20, 40, 80, 160, 320, 360, 360]
    assert lifecycle.retried_at == at(100)


def test_the_delay_starts_again_once_the_job_ran_the_longest_delay() -> None:
    last = retried_at(0, 40)  # the pods came back at 40
    assert RETRY_BACKOFF.delay(last, T0.timestamp() + 40 + 359) == 80
    assert RETRY_BACKOFF.delay(last, T0.timestamp() + 40 + 360) == 10


def test_the_wait_counts_from_the_recorded_retry_and_says_when() -> None:
    last = retried_at(95, 20)
    assert retry_wait(last, NOW) == pytest.approx(15)
    assert retry_wait(last, NOW + 15) is None
    assert retry_wait(Lifecycle(), NOW) is None
    assert retry_note(last) == f"in 20 s, at {at(115)}"


def test_a_backoff_needs_sensible_delays() -> None:
    with pytest.raises(ValueError, match="initial <= maximum"):
        RetryBackoff(initial=0)
    with pytest.raises(ValueError, match="initial <= maximum"):
        RetryBackoff(initial=20, maximum=10)


def test_a_restarts_wait_holds_every_pod_a_replacements_only_new_ones() -> None:
    restarting = JobStatus.model_validate(
        {"conditions": [{"type": "Running", "status": "True", "reason": RESTARTING}]}
    )
    waiting = retried_at(95, 10)
    assert retry_hold(restarting, waiting, NOW) == "all"
    assert retry_hold(JobStatus(), waiting, NOW) == "new"
    assert retry_hold(restarting, waiting, NOW + 5) is None


def test_ended_pods_are_replaced_after_one_retry_that_later_ones_join() -> None:
    first = replace_pods(Verdict(RUNNING, Lifecycle()), ["w-1"], backoff=RETRY_BACKOFF, now=NOW)
    assert (first.replaced, first.retried, first.lifecycle.retry_delay) == (("w-1",), True, 10)
    # Another pod ends while the retry waits: it goes, and comes back with the first.
    joined = replace_pods(
        Verdict(RUNNING, first.lifecycle), ["w-2"], backoff=RETRY_BACKOFF, now=NOW + 3
    )
    assert (joined.replaced, joined.retried, joined.lifecycle) == (("w-2",), False, first.lifecycle)
    # Nothing to replace, or a job that failed: no retry.
    assert replace_pods(first, [], backoff=RETRY_BACKOFF, now=NOW) == first
    failed = Verdict(Outcome("failed"), Lifecycle())
    assert replace_pods(failed, ["w-1"], backoff=RETRY_BACKOFF, now=NOW) == failed


def test_a_running_jobs_message_says_when_its_pods_come_back() -> None:
    waiting = retried_at(95, 10)
    noted = noting_retry(RUNNING, waiting, NOW)
    assert noted.message == (
        f"2 of 3 worker(s) Ready. Ended pods are created again in 10 s, at {at(105)} "
        "(retry backoff)."
    )
    assert noting_retry(RUNNING, waiting, NOW + 5) == RUNNING
    restarting = Outcome("running", RESTARTING, "Restart 1 of 2 in 10 s.")
    assert noting_retry(restarting, waiting, NOW) == restarting


def test_a_verdict_says_when_the_pods_come_back_even_without_a_policy() -> None:
    """A paused job (no policy to apply) whose last retry still waits: its message and its
    requeue both come from the one verdict."""
    paused = Outcome("pending", "Paused", "The job is paused.")
    verdict = judge(
        paused,
        retried_at(95, 10),
        policy=None,
        previous=JobStatus(),
        pods={},
        containers={},
        replaced=(),
        backoff=RETRY_BACKOFF,
        now=NOW,
    )
    assert verdict.outcome.message == (
        f"The job is paused. Ended pods are created again in 10 s, at {at(105)} (retry backoff)."
    )
    assert verdict.wait == pytest.approx(5)
    assert not verdict.retried
