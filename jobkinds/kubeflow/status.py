"""Kubeflow's MPIJob status, written from jobcore's status and read back into it.

jobcore derives a T9k-shaped `JobStatus` on every pass; `KubeflowStatus` stores it in
Kubeflow's shape and reads back what the job layer needs: the phase, whether and how the job
ended (Completed or Failed, their reasons and times), the pause (Paused), when the job was
initialized and last ran, and the pod counts. Condition times are jobcore's, so an unchanged
job is written the same way on every pass. Kubeflow's fields, from jobcore's:

- Created: Initialized; True `MPIJobCreated`, or False with its reason (a refused child).
- Suspended: Paused; False `MPIJobSuspending` while the pods go, True `MPIJobSuspended` once
  they are gone, False `MPIJobResumed` after.
- Running: True `MPIJobRunning` while Running; False `MPIJobSuspended` while suspended; False
  `MPIJobRunning` once ended; else False with the reason the job is pending.
- Succeeded, Failed: Completed, Failed, once the job ended.
- replicaStatuses: the tasks' pods, Running ones as active, Succeeded and Failed (zeros too).
- startTime: Initialized's time or the last resume's; none while a job suspended from its
  first status was never resumed. completionTime: the end's time. lastReconcileTime: the
  latest condition time.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import Literal

from pydantic import BaseModel

from jobcore import Object
from jobcore.jobs import INVALID_SPEC
from jobcore.jobs import JobStatus
from jobcore.jobs import parse_time
from jobcore.launcher import LAUNCHER
from jobcore.launcher import WORKER
from jobkinds.kubeflow.spec import JobCondition
from jobkinds.kubeflow.spec import MPIJobStatus
from jobkinds.kubeflow.spec import ReplicaStatus

REPLICA_TYPES = {"Launcher": LAUNCHER, "Worker": WORKER}
"""Kubeflow's replica types, and jobcore's names for them."""
SUSPENDING = "MPIJobSuspending"
"""The Suspended condition's reason while the pods of a job being suspended go."""
EVICTED = "MPIJobEvicted"
"""The Failed reason of a job whose workers were evicted."""
MAX_COUNT = 10_000
"""The most pods of one phase `read` stands in for: a count a pod list could reach."""
_ENDS: tuple[tuple[str, Literal["Completed", "Failed"]], ...] = (
    ("Succeeded", "Completed"),
    ("Failed", "Failed"),
)
"""Each phase a job ends in, and jobcore's condition that says how."""
_EPOCH = datetime.min.replace(tzinfo=UTC)


class KubeflowStatus:
    """A `jobcore.StatusPart` for Kubeflow's MPIJob status; see the module docstring."""

    model: type[BaseModel] = MPIJobStatus
    columns: Sequence[Mapping[str, Any]] = ()
    progress = frozenset({"replicaStatuses"})

    def write(self, status: JobStatus, job: Object) -> dict[str, Any]:
        if not status.conditions:
            return {}
        meta = job["metadata"]
        conditions = _conditions(status, f"{meta.get('namespace') or ''}/{meta['name']}")
        times = [c.last_transition_time for c in conditions if c.last_transition_time]
        return MPIJobStatus(
            conditions=conditions,
            replica_statuses=_replica_statuses(status, job),
            start_time=_start_time(status),
            completion_time=_completion_time(status),
            last_reconcile_time=max(times, key=_moment) if times else None,
        ).to_api()

    def read(self, stored: Mapping[str, Any]) -> JobStatus:
        status = MPIJobStatus.model_validate(stored)
        found = {c.type: c for c in status.conditions}
        if not found:
            return JobStatus()
        conditions = []
        if created := found.get("Created"):
            reason = "Initialized" if created.status == "True" else created.reason
            conditions.append(_generic("Initialized", created, reason=reason))
        if running := found.get("Running"):
            conditions.append(_generic("Running", running))
        elif created:  # never written yet: as jobcore stamped it, with the first status
            conditions.append(_generic("Running", created, status="False", reason="Pending"))
        if succeeded := found.get("Succeeded"):
            conditions.append(_generic("Completed", succeeded))
        if failed := found.get("Failed"):
            conditions.append(_generic("Failed", failed))
        if suspended := found.get("Suspended"):
            pause = "Paused" if suspended.status == "True" else "Resumed"
            if suspended.reason == SUSPENDING:
                pause = "Pausing"
            conditions.append(_generic("Paused", suspended, reason=pause))
        return JobStatus.model_validate(
            {"conditions": conditions, "phase": _phase(found), "tasks": _tasks(status)}
        )


def _tasks(status: MPIJobStatus) -> list[dict[str, Any]]:
    """Stand-ins for the pods `replicaStatuses` counts, so that the counts read back as
    written: the writer compares a new status' form with the stored one's, and a count that
    fell to zero would otherwise look unchanged. Capitalized, they are named after no pod and
    count as gone once jobcore derives the tasks from the pods."""
    tasks = []
    for kubeflow, ours in REPLICA_TYPES.items():
        counts = status.replica_statuses.get(kubeflow)
        if counts is None:
            continue
        replicas = [
            {"name": f"{kubeflow}-{phase}-{i}", "phase": phase}
            for phase, count in (
                ("Running", counts.active),
                ("Succeeded", counts.succeeded),
                ("Failed", counts.failed),
            )
            for i in range(min(count or 0, MAX_COUNT))
        ]
        tasks.append({"type": ours, "status": replicas})
    return tasks


def _phase(found: Mapping[str, JobCondition]) -> str:
    """The first of these whose condition holds, else Pending."""
    for kind, phase in (
        ("Succeeded", "Succeeded"),
        ("Failed", "Failed"),
        ("Suspended", "Paused"),
        ("Running", "Running"),
    ):
        condition = found.get(kind)
        if condition is not None and condition.status == "True":
            return phase
    return "Pending"


def _generic(
    kind: str, condition: JobCondition, *, status: str | None = None, reason: str | None = None
) -> dict[str, Any]:
    """A condition of jobcore's status, in its API form, from one of Kubeflow's."""
    return {
        "type": kind,
        "status": status or condition.status,
        "reason": reason if reason is not None else condition.reason,
        "message": condition.message,
        "lastTransitionTime": condition.last_transition_time,
    }


def _condition(
    kind: str, holds: bool, reason: str | None, message: str | None, time: str | None
) -> JobCondition:
    return JobCondition(
        type=kind,
        status="True" if holds else "False",
        reason=reason,
        message=message,
        last_update_time=time,
        last_transition_time=time,
    )


def _conditions(status: JobStatus, name: str) -> list[JobCondition]:
    """Created, Suspended, Running, then Succeeded or Failed, as each applies."""
    initialized, running = status.condition("Initialized"), status.condition("Running")
    paused = status.condition("Paused")
    ended = status.phase in ("Succeeded", "Failed")
    found = []
    if initialized is not None:
        created = initialized.status == "True"
        found.append(
            _condition(
                "Created",
                created,
                "MPIJobCreated" if created else initialized.reason,
                f"MPIJob {name} is created." if created else initialized.message,
                initialized.last_transition_time,
            )
        )
    suspended = not ended and paused is not None and paused.reason in ("Pausing", "Paused")
    if paused is not None:
        reason, message = (
            ("MPIJobSuspended", "MPIJob suspended")
            if paused.status == "True"
            else (SUSPENDING, "MPIJob suspending: deleting its pods")
            if paused.reason == "Pausing"
            else ("MPIJobResumed", "MPIJob resumed")
        )
        found.append(
            _condition(
                "Suspended", paused.status == "True", reason, message, paused.last_transition_time
            )
        )
    if initialized is not None and running is not None:
        since = running.last_transition_time
        if ended:
            # It ran if Running changed since the first status (stamped all at once).
            ran = _moment(since) > _moment(initialized.last_transition_time)
            said = "is running." if ran else "is finished but Running condition was never set."
            found.append(
                _condition("Running", False, "MPIJobRunning", f"MPIJob {name} {said}", since)
            )
        elif suspended:
            # Since it stopped running, or since the suspension if it ran until then.
            if running.status == "True" and paused is not None:
                since = paused.last_transition_time
            message = f"MPIJob {name} is suspended."
            found.append(_condition("Running", False, "MPIJobSuspended", message, since))
        elif status.phase == "Running":
            found.append(
                _condition("Running", True, "MPIJobRunning", f"MPIJob {name} is running.", since)
            )
        else:
            found.append(_condition("Running", False, running.reason, running.message, since))
    for phase, kind in _ENDS:
        end = status.condition(kind)
        if status.phase == phase and end is not None:
            found.append(_condition(phase, True, end.reason, end.message, end.last_transition_time))
    return found


def _replica_statuses(status: JobStatus, job: Object) -> dict[str, ReplicaStatus]:
    """Each replica type the spec has: its pods by phase, as the tasks count them.

    Zeros are written, unlike Kubeflow's: the status is stored with a merge patch, which would
    keep a count that is left out.
    """
    specs = (job.get("spec") or {}).get("mpiReplicaSpecs")
    ended = status.condition("Failed") if status.phase == "Failed" else None
    counts = {}
    for kubeflow, ours in REPLICA_TYPES.items():
        if not isinstance(specs, dict) or kubeflow not in specs:
            continue
        tasks = [task for task in status.tasks if task.type == ours]
        succeeded = sum(task.count("Succeeded") for task in tasks)
        failed = sum(task.count("Failed") for task in tasks)
        # A job that succeeded, or failed but for evicted workers or a refused spec, ended
        # with its launcher: its one pod counts even when Kubernetes deleted it (as it does a
        # pod restarted in place, past its backoffLimit).
        if ours == LAUNCHER and status.phase == "Succeeded":
            succeeded = max(succeeded, 1)
        if ours == LAUNCHER and ended and ended.reason not in (EVICTED, INVALID_SPEC):
            failed = max(failed, 1)
        counts[kubeflow] = ReplicaStatus(
            active=sum(task.count("Running") for task in tasks), succeeded=succeeded, failed=failed
        )
    return counts


def _start_time(status: JobStatus) -> str | None:
    """The last resume, else the job's first status, unless it was suspended from then on."""
    initialized, paused = status.condition("Initialized"), status.condition("Paused")
    if initialized is None:
        return None
    if paused is not None:
        if paused.reason == "Resumed":
            return paused.last_transition_time
        if _moment(paused.last_transition_time) <= _moment(initialized.last_transition_time):
            return None
    return initialized.last_transition_time


def _completion_time(status: JobStatus) -> str | None:
    end = status.condition("Completed" if status.phase == "Succeeded" else "Failed")
    if status.phase not in ("Succeeded", "Failed") or end is None or end.reason == INVALID_SPEC:
        return None
    return end.last_transition_time


def _moment(timestamp: str | None) -> datetime:
    """An API timestamp as a time; the earliest time when missing or malformed."""
    moment = parse_time(timestamp)
    if moment is None:
        return _EPOCH
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
