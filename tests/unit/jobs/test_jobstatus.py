"""Status derivation: tasks, aggregate, conditions and phase from plain pod objects."""

from __future__ import annotations

from typing import Any

from jobcore._jobs.status import MAX_MESSAGE
from jobcore._jobs.status import Lifecycle
from jobcore._jobs.status import bounded
from jobcore._jobs.status import derive_status
from jobcore._jobs.status import invalid_status
from jobcore._jobs.tasks import replica_phase
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import JobStatus
from jobcore.jobs import Outcome
from jobcore.jobs import ResumeSpec

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
    lifecycle: Lifecycle | None = None,
) -> JobStatus:
    return derive_status(
        previous=previous or JobStatus(),
        pods=pods,
        replica_types=TYPES,
        desired={"launcher": 1, "worker": 2},
        outcome=outcome,
        lifecycle=lifecycle or Lifecycle(),
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


# Lifecycle -------------------------------------------------------------------------------

PAUSED_OUTCOME = Outcome("pending", "Paused", "The job is paused.")


def test_pausing_keeps_the_phase_until_the_pods_are_gone_then_paused() -> None:
    running = derive([ready(pod("j-worker-0", "worker"))], Outcome("running"))
    pausing = derive(
        [ready(pod("j-worker-0", "worker"))],
        PAUSED_OUTCOME,
        previous=running,
        lifecycle=Lifecycle(pause="pausing"),
    )
    assert pausing.phase == "Running"
    assert conditions(pausing)["Paused"] == ("False", "Pausing")
    paused = derive([], PAUSED_OUTCOME, previous=pausing, lifecycle=Lifecycle(pause="paused"))
    assert paused.phase == "Paused"
    assert conditions(paused)["Paused"] == ("True", "Paused")
    assert conditions(paused)["Running"][0] == "False"
    again = derive([], PAUSED_OUTCOME, previous=paused, lifecycle=Lifecycle(pause="pausing"))
    assert again.phase == "Pending", "a phase other than Pending or Running is not kept"


def test_a_resumed_job_is_resuming_while_pending_then_running() -> None:
    paused = derive([], PAUSED_OUTCOME, lifecycle=Lifecycle(pause="paused"))
    resumed = Lifecycle(pause="resumed")
    resuming = derive([pod("j-worker-0", "worker")], Outcome("pending"), paused, lifecycle=resumed)
    assert resuming.phase == "Resuming"
    assert conditions(resuming)["Paused"] == ("False", "Resumed")
    still = derive([pod("j-worker-0", "worker")], Outcome("pending"), resuming, lifecycle=resumed)
    assert still.phase == "Resuming"
    running = derive(
        [ready(pod("j-worker-0", "worker"))], Outcome("running"), still, lifecycle=resumed
    )
    assert running.phase == "Running"
    assert derive([], Outcome("pending"), running, lifecycle=resumed).phase == "Pending"


def test_job_restarts_add_to_every_tasks_restart_count() -> None:
    restarted = pod("j-worker-0", "worker", containerStatuses=[{"name": "main", "restartCount": 1}])
    status = derive([restarted], Outcome("running"), lifecycle=Lifecycle(restarts=2))
    assert [(t.type, t.restart_count) for t in status.tasks] == [("launcher", 2), ("worker", 3)]
    assert status.restarts == 2
    assert status.to_api()["restarts"] == 2
    assert "restarts" not in derive([restarted], Outcome("running")).to_api()


def test_uninitialized_says_why() -> None:
    missing = ("PodGroupUnavailable", "PodGroup scheduling.volcano.sh/v1beta1 is not installed")
    status = derive([], Outcome("pending"), lifecycle=Lifecycle(uninitialized=missing))
    initialized = status.condition("Initialized")
    assert initialized is not None
    assert (initialized.status, initialized.reason, initialized.message) == ("False", *missing)
    assert conditions(derive([], Outcome("pending"), status))["Initialized"][0] == "True"


def test_a_rejected_spec_is_reported_until_it_is_put_back() -> None:
    assert "SpecRejected" not in conditions(derive([], Outcome("pending")))
    kept = [ResumeSpec.model_validate({"type": "worker", "command": ["resume"]})]
    rejected = derive(
        [],
        Outcome("pending"),
        lifecycle=Lifecycle(rejected="resumeSpecs cannot change", resume_specs=kept),
    )
    condition = rejected.condition("SpecRejected")
    assert condition is not None
    assert (condition.status, condition.message) == ("True", "resumeSpecs cannot change")
    assert JobStatus.model_validate(rejected.to_api()).resume_specs == kept
    accepted = derive([], Outcome("pending"), rejected, lifecycle=Lifecycle(resume_specs=kept))
    assert conditions(accepted)["SpecRejected"] == ("False", "Accepted")


def test_a_long_condition_message_is_cut_and_says_so() -> None:
    failure = "Pod[j-launcher] exited with error code 1: " + "x" * 5_000
    status = derive([pod("j-launcher", "launcher", phase="Failed")], Outcome("failed", "", failure))
    for condition in status.conditions:
        assert condition.message is not None and len(condition.message) <= MAX_MESSAGE
    failed = status.condition("Failed")
    assert failed is not None and failed.message is not None
    assert failed.message.startswith("Pod[j-launcher] exited") and failed.message.endswith(
        " [truncated]"
    )
    assert bounded("short") == "short"


def test_a_replica_type_with_many_pods_is_counted_and_lists_its_problems_only() -> None:
    running = [pod(f"j-worker-{i}", "worker") for i in range(3, 150)]
    pulling = pod(
        "j-worker-2",
        "worker",
        phase="Pending",
        containerStatuses=[{"name": "w", "state": {"waiting": {"reason": "ImagePullBackOff"}}}],
    )
    failed = [pod(f"j-worker-{i}", "worker", phase="Failed") for i in range(2)]
    status = derive([pod("j-launcher", "launcher"), pulling, *failed, *running], Outcome("running"))
    launcher, workers = status.tasks
    assert launcher.aggregate is None and [r.name for r in launcher.status] == ["j-launcher"]
    assert workers.aggregate is not None
    assert (workers.aggregate.running, workers.aggregate.failed, workers.aggregate.pending) == (
        147,
        2,
        1,
    )
    assert [(r.name, r.phase) for r in workers.status] == [
        ("j-worker-0", "Failed"),
        ("j-worker-1", "Failed"),
        ("j-worker-2", "Pending"),
    ]
    assert (workers.count("Running"), launcher.count("Running")) == (147, 1)
    assert status.aggregate.running == 148


def test_only_the_first_problems_keep_their_containers_but_every_failed_pod_is_listed() -> None:
    exited = [{"name": "w", "state": {"terminated": {"exitCode": 1}}}]
    failed = [
        pod(f"j-worker-{i}", "worker", "Failed", containerStatuses=exited) for i in range(150)
    ]
    (_, workers) = derive(failed, Outcome("failed")).tasks
    assert len(workers.status) == 150
    assert all(r.uid == f"uid-j-worker-{i}" for i, r in enumerate(workers.status))
    assert [bool(r.containers) for r in workers.status] == [True] * 20 + [False] * 130


def test_many_containers_compact_a_type_with_few_pods() -> None:
    many = [{"name": f"c{n}", "state": {"running": {}}} for n in range(20)]
    pods = [pod(f"j-worker-{i}", "worker", containerStatuses=many) for i in range(60)]
    (_, workers) = derive(pods, Outcome("running")).tasks
    assert workers.aggregate is not None and workers.aggregate.running == 60
    assert workers.status == []
