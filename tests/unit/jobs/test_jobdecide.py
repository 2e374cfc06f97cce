"""The job layer's decisions on plain pods, statuses and a fixed clock, and its announcements.

Steps 2 and 4 of a reconcile (`jobcore._jobs.decide`, `jobcore._jobs.retries`) call nothing,
and step 6 (`jobcore._jobs.announce`) only hands Events to a recorder: each is tested here on
its own.
"""

from __future__ import annotations

from typing import Any

from jobcore import Object
from jobcore._jobs.announce import Announcer
from jobcore._jobs.decide import frozen_outcome
from jobcore._jobs.decide import has_ended
from jobcore._jobs.retries import RESTARTING
from jobcore._jobs.retries import RETRY_BACKOFF
from jobcore._jobs.retries import judge
from jobcore._jobs.retries import restart_recorded
from jobcore._jobs.status import Lifecycle
from jobcore._jobs.status import derive_status
from jobcore._jobs.status import invalid_status
from jobcore.jobs import JobStatus
from jobcore.jobs import Outcome
from tests.unit.jobs.test_jobpolicy import NOW
from tests.unit.jobs.test_jobpolicy import failed
from tests.unit.jobs.test_jobpolicy import pod
from tests.unit.jobs.test_jobpolicy import policy

CONTAINERS = {"launcher": "launcher", "worker": "worker"}
FAILURE = Outcome("failed", "Failed", "The launcher exited 1.", "Pod[w-1] exited with 1")
RETRIED = policy(backoffLimit=2, restartPolicy="OnFailure")


def with_uid(obj: Object, uid: str) -> Object:
    obj["metadata"]["uid"] = uid
    return obj


def decide(
    outcome: Outcome, previous: JobStatus, pods: dict[str, Object], restarts: int = 0
) -> Any:
    return judge(
        outcome,
        Lifecycle(restarts=restarts),
        policy=RETRIED,
        previous=previous,
        pods=pods,
        containers=CONTAINERS,
        replaced=(),
        backoff=RETRY_BACKOFF,
        now=NOW,
    )


def status_of(
    outcome: Outcome, pods: dict[str, Object] | None = None, lifecycle: Lifecycle | None = None
) -> JobStatus:
    """The first status of a one-worker job with these pods and this outcome."""
    return derive_status(
        previous=JobStatus(),
        pods=(pods or {}).values(),
        replica_types=["worker"],
        desired={"worker": 1},
        outcome=outcome,
        lifecycle=lifecycle or Lifecycle(),
    )


def test_a_retried_failure_is_counted_then_recorded_once() -> None:
    pods = {"w-1": with_uid(failed("w-1", 1), "u1")}
    first = decide(FAILURE, JobStatus(), pods)
    assert first.restart == "count"
    assert first.lifecycle.restarts == 1
    assert (first.outcome.state, first.outcome.reason) == ("running", RESTARTING)
    # The restart was written, the deletion failed: the same failed pod is not counted again.
    written = status_of(first.outcome, pods, first.lifecycle)
    again = decide(FAILURE, written, pods, restarts=1)
    assert (again.restart, again.lifecycle.restarts) == ("recorded", 1)
    assert restart_recorded(written, pods.values())


def test_a_pod_the_restart_deleted_failing_on_its_way_out_is_not_counted_again() -> None:
    pods = {"w-1": with_uid(failed("w-1", 1), "u1"), "l": with_uid(pod("l"), "u2")}
    first = decide(FAILURE, JobStatus(), pods)
    written = status_of(first.outcome, pods, first.lifecycle)
    going = with_uid(failed("l", 143), "u2")
    going["metadata"]["deletionTimestamp"] = "2026-11-21T10:01:40Z"
    again = decide(FAILURE, written, {**pods, "l": going}, restarts=1)
    assert (again.restart, again.lifecycle.restarts) == ("recorded", 1)


def test_a_worker_that_stopped_with_0_and_is_deleted_by_the_restart_is_not_counted_again() -> None:
    """A worker whose server exits 0 on SIGTERM stops before its launcher: a failure, and a
    restart; the deleted pod Succeeded on its way out is that restart's, not a second one."""
    stopped = with_uid(pod("w-1", phase="Succeeded"), "u1")
    pods = {"w-1": stopped, "l": with_uid(pod("l", "launcher"), "u2")}
    first = decide(FAILURE, JobStatus(), pods)
    written = status_of(first.outcome, pods, first.lifecycle)
    stopped["metadata"]["deletionTimestamp"] = "2026-11-21T10:01:40Z"
    again = decide(FAILURE, written, pods, restarts=1)
    assert (again.restart, again.lifecycle.restarts) == ("recorded", 1)


def test_a_new_failure_after_a_restart_is_counted() -> None:
    old = {"w-1": with_uid(failed("w-1", 1), "u1")}
    first = decide(FAILURE, JobStatus(), old)
    written = status_of(first.outcome, old, first.lifecycle)
    new = {"w-1": with_uid(failed("w-1", 1), "u2")}
    assert decide(FAILURE, written, new, restarts=1).restart == "count"


def test_the_backoff_limit_ends_the_job() -> None:
    pods = {"w-1": with_uid(failed("w-1", 1), "u3")}
    verdict = decide(FAILURE, JobStatus(), pods, restarts=2)
    assert verdict.restart is None
    assert verdict.outcome.reason == "BackoffLimitExceeded"
    assert verdict.outcome.message.startswith("The job failed 3 times")


def test_a_pending_job_coming_back_from_a_restart_stays_running() -> None:
    previous = JobStatus.model_validate(
        {"conditions": [{"type": "Running", "status": "True", "reason": RESTARTING}]}
    )
    pending = Outcome("pending", "WorkersNotReady", "Waiting.")
    verdict = decide(pending, previous, {"w-1": pod("w-1", phase="Pending")})
    assert (verdict.outcome.state, verdict.outcome.reason) == ("running", RESTARTING)


def test_an_ended_status_gives_back_its_outcome_and_an_invalid_one_has_not_ended() -> None:
    ended = status_of(FAILURE)
    assert has_ended(ended)
    assert frozen_outcome(ended) == FAILURE
    assert not has_ended(invalid_status(JobStatus(), "Invalid spec: spec.x: bad"))


class Recorded:
    """Stands in for the controller's EventRecorder: keeps what it was given to emit."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def emit(self, obj: Object, *, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))


def test_each_transition_is_announced_once() -> None:
    recorder = Recorded()
    announcer = Announcer(recorder, "MPIJob")  # type: ignore[arg-type]
    job: Object = {"metadata": {"name": "j", "namespace": "ns"}}
    running = status_of(Outcome("running", "Running", "All pods are running normally."))
    announcer.transitions(job, JobStatus(), running)
    announcer.transitions(job, running, running)
    assert [reason for _, reason, _ in recorder.events] == ["Initialized", "Running"]
    announcer.refused(job, "Pod j-worker-0: exceeded quota")
    assert recorder.events[-1] == (
        "Warning",
        "FailedCreate",
        "Error creating Pod j-worker-0: exceeded quota",
    )
