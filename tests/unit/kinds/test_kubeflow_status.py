"""Kubeflow's MPIJob status through a job's life: what is written, and that it reads back.

`Passes` runs the reconciler's status steps for one job (jobcore's own decisions and status
derivation, the kind's outcome) with the clock in the test's hands. After every change, a pass
that sees nothing new must write nothing: whether it starts from the status it wrote last
(the cache lags) or from the status read back from the stored one.
"""

from __future__ import annotations

from typing import Any

from jobcore import REGISTRY
from jobcore import Object
from jobcore._jobs.decide import frozen_outcome
from jobcore._jobs.decide import has_ended
from jobcore._jobs.decide import is_invalid
from jobcore._jobs.decide import lifecycle_of
from jobcore._jobs.status import derive_status
from jobcore._jobs.status import invalid_status
from jobcore.jobs import JobStatus
from jobcore.jobs import Outcome
from jobcore.testing import job_manifest
from jobcore.testing import job_of
from jobcore.testing import observed_of
from jobcore.testing import pod_of
from jobcore.testing import spec_with
from jobkinds.kubeflow import KubeflowMPIJobKind
from jobkinds.kubeflow.children import launcher_job
from jobkinds.kubeflow.status import KubeflowStatus
from tests.support.jobdocs import sample
from tests.unit.jobs.test_jobdecide import Recorded

KIND = KubeflowMPIJobKind()
PART = KubeflowStatus()
NAME, NS = "pi", "team-a"
JOB = f"{NS}/{NAME}"


def at(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}Z"


class Passes:
    """One job's status passes; `stored` is what the API server holds."""

    def __init__(self, **spec: Any) -> None:
        base: dict[str, Any] = sample("kubeflow-mpijob-openmpi")["spec"]
        self.obj = job_manifest(KIND, spec_with(base, **spec), name=NAME, namespace=NS)
        self.stored: dict[str, Any] = {}
        self.written = JobStatus()

    def job(self, **spec: Any) -> None:
        self.obj["spec"] = spec_with(self.obj["spec"], **spec)

    def run(self, second: int, *children: Object) -> dict[str, Any]:
        """A pass at `second`; then two more later that see the same must write nothing."""
        written, self.written = self._pass(second, children, self.stored, self.written)
        self.stored = merged(self.stored, written)
        for previous in (self.written, PART.read(self.stored)):
            again = self._derive(second + 30, children, previous)
            assert PART.write(again, self.obj) == self.stored
        return self.stored

    def _pass(
        self, second: int, children: tuple[Object, ...], stored: dict[str, Any], last: JobStatus
    ) -> tuple[dict[str, Any], JobStatus]:
        previous = PART.read(stored)
        status = self._derive(second, children, previous)
        new = PART.write(status, self.obj)
        return (new, status) if new != PART.write(previous, self.obj) else (stored, last)

    def _derive(self, second: int, children: tuple[Object, ...], previous: JobStatus) -> JobStatus:
        job = job_of(KIND, self.obj, status=previous)
        observed = observed_of(*children, resources=KIND.child_resources)
        if has_ended(previous):
            outcome = frozen_outcome(previous)
        elif job.paused:
            outcome = Outcome("pending", "Paused", "The job is paused.")
        else:
            outcome = KIND.interpret(job, observed)
        return derive_status(
            previous=JobStatus() if is_invalid(previous) else previous,
            pods=observed.pods.values(),
            replica_types=KIND.replica_types,
            desired=KIND.replicas(job),
            outcome=outcome,
            lifecycle=lifecycle_of(job, previous, observed),
            timestamp=at(second),
        )

    def pods(self, phase: str, *, launcher: str = "Running", **job: Any) -> list[Object]:
        """Two workers in `phase`, the launcher Job with `job` conditions and its pod."""
        spec = job_of(KIND, self.obj)
        batch = launcher_job(spec)
        batch["status"] = {
            "conditions": [{"type": t, "status": "True", **c} for t, c in job.items()]
        }
        pod = pod_of(spec, f"{NAME}-launcher-x1y2z", "launcher", phase=launcher)
        workers = [pod_of(spec, f"{NAME}-worker-{i}", "worker", i, phase=phase) for i in range(2)]
        return [batch, pod, *workers]


def merged(stored: Any, patch: Any) -> Any:
    """`patch` applied to `stored` as the API server applies the writer's merge patch."""
    if not isinstance(stored, dict) or not isinstance(patch, dict):
        return patch
    result = {**stored}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merged(stored.get(key), value)
    return result


def counts(active: int = 0, succeeded: int = 0, failed: int = 0) -> dict[str, int]:
    return {"active": active, "succeeded": succeeded, "failed": failed}


NONE_YET = {"Launcher": counts(), "Worker": counts()}


def condition(kind: str, status: bool, reason: str, message: str, second: int) -> dict[str, Any]:
    time = at(second)
    return {
        "type": kind,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastUpdateTime": time,
        "lastTransitionTime": time,
    }


CREATED = condition("Created", True, "MPIJobCreated", f"MPIJob {JOB} is created.", 1)
PENDING = "MPIJobPending", "0 of 2 worker(s) running; the launcher is not."


def test_a_job_that_runs_and_succeeds() -> None:
    job = Passes()
    assert job.run(1, *job.pods("Pending", launcher="Pending")) == {
        "conditions": [CREATED, condition("Running", False, *PENDING, 1)],
        "replicaStatuses": NONE_YET,
        "startTime": at(1),
        "lastReconcileTime": at(1),
    }
    running = job.run(2, *job.pods("Running"))
    assert running["conditions"][1] == condition(
        "Running", True, "MPIJobRunning", f"MPIJob {JOB} is running.", 2
    )
    assert running["replicaStatuses"] == {"Launcher": counts(1), "Worker": counts(2)}
    done = job.run(3, *job.pods("Running", launcher="Succeeded", Complete={}))
    assert done == {
        "conditions": [
            CREATED,
            condition("Running", False, "MPIJobRunning", f"MPIJob {JOB} is running.", 3),
            condition(
                "Succeeded", True, "MPIJobSucceeded", f"MPIJob {JOB} successfully completed.", 3
            ),
        ],
        "replicaStatuses": {"Launcher": counts(succeeded=1), "Worker": counts(2)},
        "startTime": at(1),
        "completionTime": at(3),
        "lastReconcileTime": at(3),
    }
    read = PART.read(done)
    assert (read.phase, has_ended(read)) == ("Succeeded", True)
    completed = read.condition("Completed")
    assert completed is not None and completed.last_transition_time == at(3)


def test_a_job_that_never_ran_says_so_when_it_fails() -> None:
    job = Passes()
    job.run(1, *job.pods("Pending", launcher="Pending"))
    failed = {"reason": "DeadlineExceeded", "message": "Job was active longer than specified"}
    stored = job.run(5, *job.pods("Pending", launcher="Failed", Failed=failed))
    never = f"MPIJob {JOB} is finished but Running condition was never set."
    assert stored["conditions"][1:] == [
        condition("Running", False, "MPIJobRunning", never, 1),
        condition("Failed", True, "DeadlineExceeded", failed["message"], 5),
    ]
    assert stored["completionTime"] == at(5)
    assert frozen_outcome(PART.read(stored)) == Outcome(
        "failed", "DeadlineExceeded", failed["message"]
    )


def test_counts_follow_the_pods_after_the_end_and_the_launchers_end_counts() -> None:
    job = Passes()
    job.run(1, *job.pods("Running"))
    backoff = {"reason": "BackoffLimitExceeded", "message": "Job has reached the backoff limit"}
    batch, _, *workers = job.pods("Running", Failed=backoff)
    # Kubernetes deleted the launcher's pod (restarted in place, past its backoffLimit).
    ended = job.run(2, batch, *workers)
    assert ended["replicaStatuses"] == {"Launcher": counts(failed=1), "Worker": counts(2)}
    assert PART.read(ended).phase == "Failed"
    gone = job.run(3, batch)  # cleanPodPolicy Running deleted the workers
    assert gone["replicaStatuses"] == {"Launcher": counts(failed=1), "Worker": counts()}
    assert gone["conditions"] == ended["conditions"]


def test_counts_are_right_when_a_thousand_workers_compact_the_tasks() -> None:
    job = Passes()
    spec = job_of(KIND, job.obj)
    workers = [
        pod_of(spec, f"{NAME}-worker-{i}", "worker", i, phase="Failed" if i < 2 else "Running")
        for i in range(1000)
    ]
    batch, launcher, *_ = job.pods("Running")
    stored = job.run(1, batch, launcher, *workers)
    assert stored["replicaStatuses"]["Worker"] == counts(998, failed=2)


def test_a_job_created_suspended_has_no_start_until_resumed() -> None:
    job = Passes(runPolicy={"suspend": True})
    suspended = f"MPIJob {JOB} is suspended."
    assert job.run(1) == {
        "conditions": [
            CREATED,
            condition("Suspended", True, "MPIJobSuspended", "MPIJob suspended", 1),
            condition("Running", False, "MPIJobSuspended", suspended, 1),
        ],
        "replicaStatuses": NONE_YET,
        "lastReconcileTime": at(1),
    }
    assert PART.read(job.stored).phase == "Paused"
    job.job(runPolicy={"suspend": False})
    resumed = job.run(4, *job.pods("Pending", launcher="Pending"))
    assert resumed["conditions"][1:] == [
        condition("Suspended", False, "MPIJobResumed", "MPIJob resumed", 4),
        condition("Running", False, *PENDING, 1),
    ]
    assert resumed["startTime"] == at(4)
    assert job.run(6, *job.pods("Running"))["conditions"][2]["status"] == "True"


def test_suspending_a_running_job_then_resuming_it() -> None:
    job = Passes()
    job.run(1, *job.pods("Pending", launcher="Pending"))
    job.run(2, *job.pods("Running"))
    job.job(runPolicy={"suspend": True})
    going = job.run(3, *job.pods("Running"))  # the pods take a while to go
    assert going["conditions"][1:] == [
        condition(
            "Suspended", False, "MPIJobSuspending", "MPIJob suspending: deleting its pods", 3
        ),
        condition("Running", False, "MPIJobSuspended", f"MPIJob {JOB} is suspended.", 3),
    ]
    gone = job.run(5)
    assert gone["conditions"][1] == condition(
        "Suspended", True, "MPIJobSuspended", "MPIJob suspended", 5
    )
    assert gone["conditions"][2]["lastTransitionTime"] == at(3)
    assert gone["replicaStatuses"] == NONE_YET
    assert gone["startTime"] == at(1)
    job.job(runPolicy={"suspend": False})
    back = job.run(7, *job.pods("Pending", launcher="Pending"))
    assert back["conditions"][1]["reason"] == "MPIJobResumed"
    assert back["startTime"] == at(7)


def test_an_invalid_spec_is_a_failure_without_a_creation() -> None:
    status = invalid_status(JobStatus(), "Invalid spec: spec.x: wrong", timestamp=at(1))
    stored = PART.write(status, job_manifest(KIND, {}, name=NAME, namespace=NS))
    assert stored == {
        "conditions": [condition("Failed", True, "InvalidSpec", "Invalid spec: spec.x: wrong", 1)],
        "replicaStatuses": {},
        "lastReconcileTime": at(1),
    }
    read = PART.read(stored)
    assert is_invalid(read) and not has_ended(read)


def test_the_guides_sample_status_reads_as_succeeded() -> None:
    guide = {
        "completionTime": "2019-07-09T22:17:06Z",
        "conditions": [
            {
                "lastTransitionTime": "2019-07-09T22:15:51Z",
                "lastUpdateTime": "2019-07-09T22:15:51Z",
                "message": "MPIJob default/tensorflow-benchmarks is created.",
                "reason": "MPIJobCreated",
                "status": "True",
                "type": "Created",
            },
            {
                "lastTransitionTime": "2019-07-09T22:15:54Z",
                "lastUpdateTime": "2019-07-09T22:15:54Z",
                "message": "MPIJob default/tensorflow-benchmarks is running.",
                "reason": "MPIJobRunning",
                "status": "False",
                "type": "Running",
            },
            {
                "lastTransitionTime": "2019-07-09T22:17:06Z",
                "lastUpdateTime": "2019-07-09T22:17:06Z",
                "message": "MPIJob default/tensorflow-benchmarks successfully completed.",
                "reason": "MPIJobSucceeded",
                "status": "True",
                "type": "Succeeded",
            },
        ],
        "replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {}},
        "startTime": "2019-07-09T22:15:51Z",
    }
    status = PART.read(guide)
    assert (status.phase, has_ended(status)) == ("Succeeded", True)
    assert frozen_outcome(status) == Outcome(
        "succeeded",
        "MPIJobSucceeded",
        "MPIJob default/tensorflow-benchmarks successfully completed.",
    )
    spec: dict[str, Any] = {"mpiReplicaSpecs": {"Launcher": {}, "Worker": {}}}
    obj = job_manifest(KIND, spec, name="tensorflow-benchmarks", namespace="default")
    written = PART.write(status, obj)
    assert written["conditions"] == guide["conditions"]
    assert written["replicaStatuses"] == {"Launcher": counts(succeeded=1), "Worker": counts()}
    assert (written["startTime"], written["completionTime"]) == (
        guide["startTime"],
        guide["completionTime"],
    )


def status_of(phase: str | None, **reasons: str) -> JobStatus:
    """A status in `phase` whose conditions of the given types hold, with those reasons."""
    conditions = [{"type": t, "status": "True", "reason": r} for t, r in reasons.items()]
    return JobStatus.model_validate({"phase": phase, "conditions": conditions})


def test_metrics_and_events_count_creations_and_ends_under_kubeflows_names() -> None:
    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    names = ("created", "successful", "failed")
    before = {n: value(f"mpi_operator_jobs_{n}_total") for n in names}
    obj = job_manifest(KIND, {}, name=NAME, namespace=NS)
    recorded = Recorded()
    announce = KIND.hooks.announce
    assert announce is not None
    pending = status_of("Pending", Initialized="Initialized")
    for previous, status in [
        (JobStatus(), pending),
        (pending, pending),
        (pending, status_of("Succeeded", Initialized="Initialized", Completed="MPIJobSucceeded")),
        (pending, status_of("Failed", Initialized="Initialized", Failed="BackoffLimitExceeded")),
        (pending, status_of("Failed", Initialized="Initialized", Failed="MPIJobEvicted")),
        (JobStatus(), status_of("Failed", Failed="InvalidSpec")),
    ]:
        announce(recorded, obj, previous, status)  # type: ignore[arg-type]
    after = {n: value(f"mpi_operator_jobs_{n}_total") for n in names}
    assert {n: after[n] - before[n] for n in names} == {"created": 1, "successful": 1, "failed": 1}
    assert recorded.events == [
        ("Normal", "MPIJobCreated", f"MPIJob {NS}/{NAME} is created."),
        ("Normal", "MPIJobSucceeded", f"MPIJob {NS}/{NAME} successfully completed."),
    ]
    assert value("mpi_operator_job_info", launcher=f"{NAME}-launcher", namespace=NS) == 1
