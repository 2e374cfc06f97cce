"""Status derivation: tasks, aggregate, conditions and phase from plain pod objects."""

from __future__ import annotations

from typing import Any

from jobcore import REPLICA_TYPE_LABEL, JobStatus, Outcome
from jobcore._jobstatus import derive_status, invalid_status, replica_phase

TYPES = ("launcher", "worker")


def pod(name: str, kind: str, phase: str | None = "Running", **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": {REPLICA_TYPE_LABEL: kind}},
        "spec": {"nodeName": "node" if phase not in (None, "Creating") else None},
        "status": {"phase": phase} if phase not in (None, "Creating") else {},
    }
    obj["status"].update(extra)
    return obj


def ready(obj: dict[str, Any]) -> dict[str, Any]:
    obj["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return obj


def derive(
    pods: list[dict[str, Any]],
    outcome: Outcome,
    previous: JobStatus | None = None,
    timestamp: str = "2026-01-01T00:00:00Z",
) -> JobStatus:
    return derive_status(
        previous=previous or JobStatus(),
        pods=pods,
        replica_types=TYPES,
        desired={"launcher": 1, "worker": 2},
        outcome=outcome,
        timestamp=timestamp,
    )


def conditions(status: JobStatus) -> dict[str, tuple[str, str | None]]:
    return {c.type: (c.status, c.reason) for c in status.conditions}


def test_tasks_and_aggregate_follow_the_pods() -> None:
    pods = [
        ready(pod("j-launcher", "launcher")),
        ready(pod("j-worker-0", "worker")),
        pod("j-worker-1", "worker", phase=None),
        pod("stray", "other"),
    ]
    status = derive(pods, Outcome("running"))
    assert [t.type for t in status.tasks] == ["launcher", "worker"]
    workers = status.tasks[1].status
    assert [(r.name, r.phase, r.uid) for r in workers] == [
        ("j-worker-0", "Running", "uid-j-worker-0"),
        ("j-worker-1", "Creating", "uid-j-worker-1"),
    ]
    assert status.aggregate.running == 2 and status.aggregate.creating == 1
    assert status.ready == "2/3"
    assert status.phase == "Running"
    assert conditions(status)["Running"] == ("True", "Running")
    assert status.to_api()["tasks"][0]["restartCount"] == 0


def test_containers_carry_state_exit_code_and_reason() -> None:
    terminated = {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    failed = pod(
        "j-launcher",
        "launcher",
        phase="Failed",
        containerStatuses=[{"name": "main", "state": terminated, "restartCount": 2}],
    )
    status = derive([failed], Outcome("failed", replica_failure="Pod[j-launcher] OOMKilled"))
    (container,) = status.tasks[0].status[0].containers
    assert (container.name, container.state, container.exit_code, container.reason) == (
        "main",
        "terminated",
        137,
        "OOMKilled",
    )
    assert status.tasks[0].restart_count == 2
    assert status.aggregate.failed == 1
    assert conditions(status)["ReplicaFailure"] == ("True", "ErrorInPod")
    assert conditions(status)["Failed"] == ("True", "Failed")
    assert conditions(status)["Completed"][0] == "False"
    failed_condition = status.condition("Failed")
    assert failed_condition is not None
    assert failed_condition.message == "The job exited with an error code."


def test_success_sets_completed_with_the_seed_messages() -> None:
    status = derive([pod("j-launcher", "launcher", phase="Succeeded")], Outcome("succeeded"))
    assert status.phase == "Succeeded"
    completed = status.condition("Completed")
    assert completed is not None
    assert (completed.status, completed.reason, completed.message) == (
        "True",
        "Succeeded",
        "The job has finished successfully.",
    )
    initialized = status.condition("Initialized")
    assert initialized is not None
    assert initialized.message == "The job has been initialized successfully."
    assert conditions(status)["Running"][0] == "False"


def test_last_transition_time_is_kept_while_a_condition_does_not_change() -> None:
    first = derive(
        [ready(pod("j-worker-0", "worker"))], Outcome("pending"), timestamp="2026-01-01T00:00:00Z"
    )
    second = derive(
        [ready(pod("j-worker-0", "worker"))],
        Outcome("pending"),
        previous=first,
        timestamp="2026-01-01T00:05:00Z",
    )
    assert second == first, "nothing changed, so nothing to write"
    third = derive(
        [ready(pod("j-worker-0", "worker"))],
        Outcome("running"),
        previous=second,
        timestamp="2026-01-01T00:09:00Z",
    )
    times = {c.type: c.last_transition_time for c in third.conditions}
    assert times["Running"] == "2026-01-01T00:09:00Z"
    assert times["Initialized"] == "2026-01-01T00:00:00Z"
    assert times["Failed"] == "2026-01-01T00:00:00Z"


def test_pods_that_disappear_are_reported_deleted() -> None:
    before = derive([pod("j-worker-0", "worker"), pod("j-worker-1", "worker")], Outcome("running"))
    after = derive([pod("j-worker-1", "worker")], Outcome("running"), previous=before)
    phases = {r.name: r.phase for r in after.tasks[1].status}
    assert phases == {"j-worker-0": "Deleted", "j-worker-1": "Running"}
    assert after.aggregate.deleted == 1


def test_replica_phase_of_a_terminating_pod_is_deleted() -> None:
    terminating = pod("p", "worker")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert replica_phase(terminating) == "Deleted"
    assert replica_phase(pod("p", "worker", phase="Pending")) == "Pending"


def test_invalid_status_fails_the_job_naming_the_field() -> None:
    status = invalid_status(JobStatus(), "Invalid spec: spec.worker.replicas: too small")
    assert status.phase == "Failed"
    failed = status.condition("Failed")
    assert failed is not None
    assert (failed.status, failed.reason) == ("True", "InvalidSpec")
    assert "spec.worker.replicas" in (failed.message or "")


def test_status_round_trips_through_its_api_form() -> None:
    status = derive([ready(pod("j-launcher", "launcher"))], Outcome("running"))
    wire = status.to_api()
    assert set(wire) == {"conditions", "phase", "tasks", "aggregate", "ready"}
    assert wire["aggregate"] == {
        "creating": 0,
        "pending": 0,
        "running": 1,
        "succeeded": 0,
        "failed": 0,
        "unknown": 0,
        "deleted": 0,
    }
    assert JobStatus.model_validate(wire) == status
    assert JobStatus.model_validate({**wire, "fromANewerVersion": 1}) == status
