"""Kubeflow MPI Operator's Normal Events, judged from the statuses the controller writes.

jobcore records its own job Events (Initialized, Running, Succeeded, and a Warning with the
failure's reason, which is Kubeflow's) and this adds Kubeflow's Normal ones under Kubeflow's
reasons and messages, so scripts that wait for `MPIJobSucceeded` keep working.
"""

from __future__ import annotations

from jobcore import EventRecorder
from jobcore import Object
from jobcore.jobs import JobStatus


def announce(recorder: EventRecorder, obj: Object, previous: JobStatus, status: JobStatus) -> None:
    """One Event per transition from `previous` to the `status` just written."""
    meta = obj["metadata"]
    name = f"{meta.get('namespace') or ''}/{meta['name']}"
    for reason, message in _transitions(previous, status, name):
        recorder.emit(obj, type="Normal", reason=reason, message=message)


def _transitions(previous: JobStatus, status: JobStatus, name: str) -> list[tuple[str, str]]:
    said = []
    if _holds(status, "Initialized") and not _holds(previous, "Initialized"):
        said.append(("MPIJobCreated", f"MPIJob {name} is created."))
    paused, was = _pause(status), _pause(previous)
    if paused == "Paused" and was != "Paused":
        said.append(("MPIJobSuspended", "MPIJob suspended"))
    if paused == "Resumed" and was != "Resumed":
        said.append(("MPIJobResumed", "MPIJob resumed"))
    if status.phase != previous.phase:
        if status.phase == "Running":
            said.append(("MPIJobRunning", f"MPIJob {name} is running"))
        elif status.phase == "Succeeded":
            said.append(("MPIJobSucceeded", f"MPIJob {name} successfully completed."))
    return said


def _holds(status: JobStatus, kind: str) -> bool:
    condition = status.condition(kind)  # type: ignore[arg-type]
    return condition is not None and condition.status == "True"


def _pause(status: JobStatus) -> str | None:
    condition = status.condition("Paused")
    return condition.reason if condition is not None else None
