"""Kubeflow's MPIJob launched through jobcore's agent: the `jobcore.dev/transport` annotation.

v2beta1 has no field for it, and its schema stays Kubeflow's byte for byte, so the choice is
an annotation on the MPIJob: `ssh` (the default: Kubeflow's behaviour, unchanged) or `agent`.
With the agent, each worker's first container runs `jobcore-agent serve` in place of its
command (sshd, in Kubeflow's images), and the launcher's first container runs its own command
under `jobcore-agent launch`, with the agent as its MPI's remote shell: no sshd anywhere, and
the launcher's record of the workers it reached (`launched`) is checked when it succeeds.
"""

from __future__ import annotations

from typing import Any

from jobcore import Object
from jobcore.jobs import FieldError
from jobcore.jobs import Job
from jobcore.launcher import AGENT_PORT
from jobcore.launcher import SSH_WAIT_SECONDS
from jobcore.launcher import Transport
from jobcore.launcher import agent_launch_command
from jobcore.launcher import agent_serve_command
from jobcore.launcher import serving
from jobcore.launcher import ssh_secret_name
from jobcore.launcher import with_agent
from jobkinds.kubeflow.spec import KubeflowMPIJobSpec
from jobkinds.mpi.mpirun import HOSTFILE

TRANSPORT_ANNOTATION = "jobcore.dev/transport"
TRANSPORTS: tuple[Transport, ...] = ("ssh", "agent")
_FIELD = f"metadata.annotations[{TRANSPORT_ANNOTATION}]"


def transport(job: Job[Any]) -> Transport:
    """The job's transport; ssh unless the annotation says agent (`transport_errors` refuses
    any other value before anything is rendered)."""
    annotations = job.obj.get("metadata", {}).get("annotations") or {}
    return "agent" if annotations.get(TRANSPORT_ANNOTATION) == "agent" else "ssh"


def transport_errors(job: Job[KubeflowMPIJobSpec]) -> list[FieldError]:
    """An unknown transport; with the agent, a launcher whose command jobcore cannot wrap (only
    args: the image's entrypoint is unknown to it) or that is a worker too (its hostfile would
    name a host without an agent)."""
    annotations = job.obj.get("metadata", {}).get("annotations") or {}
    given = annotations.get(TRANSPORT_ANNOTATION, "ssh")
    if given not in TRANSPORTS:
        return [
            FieldError(_FIELD, f'Unsupported value: "{given}": supported values: "ssh", "agent"')
        ]
    if given != "agent":
        return []
    errors = []
    if job.spec.run_launcher_as_worker:
        errors.append(
            FieldError("spec.runLauncherAsWorker", "must be false with the agent transport")
        )
    launcher = job.spec.mpi_replica_specs.launcher
    containers = (launcher.template.api["spec"].get("containers") or []) if launcher else []
    if containers and not containers[0].get("command"):
        errors.append(
            FieldError(
                "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].command",
                "Required value: with the agent transport, the agent runs the launcher's "
                "command once every worker's agent answers",
            )
        )
    return errors


def agent_worker(job: Job[KubeflowMPIJobSpec], pod: Object) -> Object:
    """`pod` (changed in place) with its first container serving the launcher through the
    agent, in place of its command."""
    container = pod["spec"]["containers"][0]
    serving(container, agent_serve_command(), AGENT_PORT)
    return with_agent(pod, job.agent, ssh_secret_name(job), [container["name"]])


def agent_launcher(job: Job[KubeflowMPIJobSpec], spec: dict[str, Any]) -> None:
    """The launcher pod's `spec` (changed in place) running its first container's command
    through the agent once every worker's agent answers."""
    container = spec["containers"][0]
    command = [*container["command"], *container.pop("args", ())]
    container["command"] = agent_launch_command(
        command, hostfile=HOSTFILE, timeout=SSH_WAIT_SECONDS
    )
    container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
    with_agent({"spec": spec}, job.agent, ssh_secret_name(job), [container["name"]])
