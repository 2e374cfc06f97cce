"""The outcome of a launcher-and-workers job, read from its pods.

A static launch: the launcher's exit decides, a worker that stops first fails it, and a job
not running yet says what it waits for; whether a pod is scheduled (the agent's launcher may
start then). Reading one pod (`failure_message`, `pod_problems`...) is the job layer's, in
`jobcore._jobs.podreading`.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobcore._jobs.kind import Outcome
from jobcore._jobs.podreading import failure_message
from jobcore._jobs.podreading import is_ready
from jobcore._jobs.podreading import name_list
from jobcore._jobs.podreading import pod_problems
from jobcore._jobs.podreading import summarize
from jobcore._jobs.podstate import pod_ended
from jobcore._jobs.podstate import pod_phase
from jobcore._runtime.resources import Object


def is_scheduled(pod: Object | None) -> bool:
    """Bound to a node, not deleted and not ended: its containers are starting or running."""
    if pod is None or pod["metadata"].get("deletionTimestamp") or pod_ended(pod):
        return False
    return bool(pod["spec"].get("nodeName"))


def launcher_outcome(
    launcher: Object | None,
    workers: Mapping[str, Object | None],
    *,
    launcher_container: str,
    worker_container: str,
    ssh_port: int,
) -> Outcome:
    """A static job's outcome: the launcher's exit decides; a worker that stops first fails it.

    The launcher is created once every worker is Ready (sshd accepting connections).
    """
    launcher_phase = pod_phase(launcher)
    if launcher_phase == "Succeeded":
        return Outcome("succeeded", "Succeeded", "The job has finished successfully.")
    failures = []
    if launcher is not None and launcher_phase == "Failed":
        failures.append(failure_message(launcher, launcher_container))
    failures += [
        failure_message(pod, worker_container)
        for pod in workers.values()
        if pod is not None and pod_ended(pod)
    ]
    if failures:
        message = (
            "The job exited with an error code."
            if launcher_phase == "Failed"
            else "A worker stopped before the launcher finished."
        )
        return Outcome("failed", "Failed", message, replica_failure=summarize(failures))
    replica_failure = pod_problems([launcher, *workers.values()])
    if launcher_phase == "Running":
        return Outcome("running", replica_failure=replica_failure)
    if launcher is not None:
        reason, message = "LauncherPending", "Waiting for the launcher to start."
    elif missing := [name for name, pod in workers.items() if pod is None]:
        reason = "WorkersCreating"
        message = f"Waiting for {len(missing)} worker(s) to be created: {name_list(missing)}."
    elif unready := [name for name, pod in workers.items() if not is_ready(pod)]:
        reason = "WorkersNotReady"
        message = (
            f"Waiting for {len(unready)} of {len(workers)} worker(s) to become Ready "
            f"(sshd accepting connections on port {ssh_port}): {name_list(unready)}."
        )
    else:
        reason, message = "LauncherCreating", "All workers are Ready; creating the launcher."
    return Outcome("pending", reason, message, replica_failure=replica_failure)
