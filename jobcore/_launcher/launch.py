"""Building blocks of a job whose launcher pod reaches its workers: names, pods and the kind.

The launcher's child names (the workers' and the headless Service are
`jobcore._jobs.workers`'), pods made from the worker template with the ssh Secret mounted,
the sshd worker or the agent's (`agent_worker_pod`), a launcher copied from the worker
container, when the launcher is due, and `LauncherWorkersKind`, what such kinds
declare alike (the bundled MPIJob, ColossalAIJob and HorovodJob are built from them), with
the check of a launch through the agent. They read a spec with `worker.replicas`,
`worker.template` (a `PodTemplateSpec`), `ssh.port`, `ssh.sshd_path` and, if it has one,
`transport`; what differs between kinds (container names, volumes, commands, environment) is
passed in by keyword. Run modes are jobcore's, applied on top.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from jobcore._jobs.kind import Job
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import Outcome
from jobcore._jobs.podreading import is_ready
from jobcore._jobs.podreading import name_list
from jobcore._jobs.workers import WORKER
from jobcore._jobs.workers import child_meta
from jobcore._jobs.workers import headless_service
from jobcore._jobs.workers import worker_name
from jobcore._launcher.agent import AGENT_KEY
from jobcore._launcher.agent import AGENT_PORT
from jobcore._launcher.agent import agent_key
from jobcore._launcher.agent import agent_serve_command
from jobcore._launcher.agent import launched
from jobcore._launcher.agent import with_agent
from jobcore._launcher.pods import is_scheduled
from jobcore._launcher.pods import launcher_outcome
from jobcore._launcher.ssh import SSHAccess
from jobcore._launcher.ssh import ssh_access
from jobcore._launcher.ssh import ssh_secret
from jobcore._launcher.ssh import ssh_secret_volume
from jobcore._launcher.ssh import sshd_command
from jobcore._runtime.resources import CONFIGMAPS
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import SECRETS
from jobcore._runtime.resources import SERVICES
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource

LAUNCHER = "launcher"
NOT_ON_LAUNCHER = (
    "name",
    "command",
    "args",
    "ports",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "restartPolicy",
)
"""Fields of the worker container that belong to sshd, not to the launch command."""
SSH_VOLUME = "jobcore-ssh"
"""The volume of the job's ssh Secret, in every pod of every kind."""
WORKERS_NOT_LAUNCHED = "WorkersNotLaunched"
"""The reason of a job whose launcher succeeded without reaching the workers its ranks need."""


# Names -----------------------------------------------------------------------------------


def launcher_name(job: Job[Any]) -> str:
    return f"{job.name}-launcher"


def ssh_secret_name(job: Job[Any]) -> str:
    return f"{job.name}-ssh"


def hostfile_name(job: Job[Any]) -> str:
    return f"{job.name}-hostfile"


# Children ------------------------------------------------------------------------------


def job_ssh(
    job: Job[Any], observed: Observed, *, mount_path: str, tunnel: bool = False
) -> tuple[Object, SSHAccess]:
    """The job's ssh Secret, and how its launcher reaches the workers' sshd (on `spec.ssh.port`)
    with it.

    An existing Secret is returned as observed: a new keypair would lock the launcher out of
    running workers, and one made before host keys existed keeps its workers unpinned.
    """
    name, port = ssh_secret_name(job), int(job.spec.ssh.port)
    secret = observed.get(SECRETS, name)
    if secret is None:
        secret = ssh_secret(job, name, SSHAccess(mount_path, port, tunnel=tunnel))
        secret["data"][AGENT_KEY] = agent_key()  # whichever transport: the Secret never changes
    return secret, ssh_access(secret, mount_path=mount_path, port=port, tunnel=tunnel)


def ssh_mount(volume: str, mount_path: str) -> dict[str, Any]:
    return {"name": volume, "mountPath": mount_path, "readOnly": True}


def template_pod(job: Job[Any], replica_type: str, index: int, name: str) -> Object:
    """A pod from spec.worker.template, labelled for `replica_type`, with the ssh Secret as a
    volume; containers left to adapt."""
    template = job.spec.worker.template
    metadata = template.metadata
    labels = {**((metadata and metadata.labels) or {}), **job.labels(replica_type, index)}
    pod_meta = child_meta(job, name, labels)
    if metadata and metadata.annotations:
        pod_meta["annotations"] = dict(metadata.annotations)
    spec = template.pod_spec()
    spec["volumes"] = [
        *spec.get("volumes", ()),
        ssh_secret_volume(SSH_VOLUME, ssh_secret_name(job)),
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def readiness_probe(port: int) -> dict[str, Any]:
    """Ready once sshd accepts connections on its port."""
    return {"tcpSocket": {"port": port}, "periodSeconds": 2, "failureThreshold": 3}


def sshd_worker_pod(
    job: Job[Any],
    index: int,
    *,
    container: str,
    ssh: SSHAccess,
    restart_policy: str | None = None,
) -> Object:
    """spec.ssh.sshdPath in place of `container`'s command; Ready once its port answers.

    restartPolicy is `restart_policy` if given, else the template's, by default Never: a
    restarted worker cannot rejoin a running launch.
    """
    pod = _worker_pod(job, index, restart_policy)
    for c in pod["spec"]["containers"]:
        if c["name"] == container:
            c["volumeMounts"] = [*c.get("volumeMounts", ()), ssh_mount(SSH_VOLUME, ssh.mount_path)]
            serving(c, sshd_command(job.spec.ssh.sshd_path, ssh), ssh.port)
    return pod


def agent_worker_pod(
    job: Job[Any], index: int, *, container: str, restart_policy: str | None = None
) -> Object:
    """`sshd_worker_pod` with jobcore's agent serving in place of sshd (`jobcore._launcher.agent`):
    the image needs no sshd; Ready once the agent's port answers."""
    pod = with_agent(
        _worker_pod(job, index, restart_policy), job.agent, ssh_secret_name(job), [container]
    )
    for c in pod["spec"]["containers"]:
        if c["name"] == container:
            serving(c, agent_serve_command(), AGENT_PORT)
    return pod


def _worker_pod(job: Job[Any], index: int, restart_policy: str | None) -> Object:
    """A worker from the template, reachable by name through the job's headless Service."""
    pod = template_pod(job, WORKER, index, worker_name(job, index))
    spec = pod["spec"]
    spec["hostname"] = worker_name(job, index)
    spec["subdomain"] = job.name
    spec["restartPolicy"] = (
        restart_policy or job.spec.worker.template.spec.restart_policy or "Never"
    )
    return pod


def serving(container: dict[str, Any], command: Sequence[str], port: int) -> None:
    """`container` running `command`, which serves the launcher on `port`, in place of its own;
    Ready once the port answers."""
    container.pop("args", None)
    container["command"] = list(command)
    container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
    container["readinessProbe"] = readiness_probe(port)


def copied_launcher_pod(
    job: Job[Any],
    *,
    worker_container: str,
    launcher_container: str,
    mount_path: str,
    config_volume: str,
    config_dir: str,
    config_map: Mapping[str, Any],
    env: Sequence[Mapping[str, Any]],
    command: Callable[[Mapping[str, Any]], list[str]],
) -> Object:
    """One container copied from `worker_container` (image, resources, env, mounts...) running
    `command(worker container)`, with the keys and a ConfigMap mounted.

    The template's other containers stay on the workers; its volumes, init containers and
    pod-level settings apply to the launcher too. The user's own value of one of our `env`
    variables wins.
    """
    pod = template_pod(job, LAUNCHER, 0, launcher_name(job))
    pod_spec = pod["spec"]
    pod_spec["restartPolicy"] = "Never"
    pod_spec["volumes"].append({"name": config_volume, "configMap": dict(config_map)})
    worker = next(c for c in pod_spec["containers"] if c["name"] == worker_container)
    user_env = list(worker.get("env", ()))
    user_names = {str(e["name"]) for e in user_env if "name" in e}
    launch = command(worker)
    launcher = {k: v for k, v in worker.items() if k not in NOT_ON_LAUNCHER}
    launcher.update(
        name=launcher_container,
        command=launch,
        env=[*(e for e in env if e["name"] not in user_names), *user_env],
        volumeMounts=[
            *worker.get("volumeMounts", ()),
            ssh_mount(SSH_VOLUME, mount_path),
            {"name": config_volume, "mountPath": config_dir, "readOnly": True},
        ],
    )
    launcher.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
    pod_spec["containers"] = [launcher]
    return pod


def launcher_due(
    job: Job[Any], observed: Observed, *, ready_needed: int | None = None, agent: bool = False
) -> bool:
    """Whether the launcher is rendered: once `ready_needed` workers (default: all) are Ready,
    or, through the `agent`, once that many are scheduled.

    A launcher that exists is always rendered, so it is never deleted because a worker stopped
    being Ready. In debug mode (the launcher runs `sleep inf`) and under a gang scheduler
    (which admits no pod until all exist) it does not wait. `jobcore-agent launch` itself
    waits for the workers' agents (`agent_launch_command`), so a launcher started with its
    scheduled workers starts its own containers (the agent's init container among them) while
    theirs start, instead of after.
    """
    if observed.get(PODS, launcher_name(job)) is not None or job.debugging or job.gang:
        return True
    replicas = job.spec.worker.replicas
    workers = [observed.get(PODS, worker_name(job, i)) for i in range(replicas)]
    started = sum(map(is_scheduled if agent else is_ready, workers))
    return started >= (replicas if ready_needed is None else ready_needed)


def launch_children(
    job: Job[Any],
    observed: Observed,
    head: Sequence[Object],
    workers: Sequence[Object],
    launcher: Callable[[], Object],
    *,
    ready_needed: int | None = None,
) -> list[Object]:
    """A job's children in the order they are made: `head` (its ssh Secret and ConfigMap),
    the headless Service on the port the launcher reaches the workers on (the agent's or
    sshd's: `spec.transport`), the `workers`, then the launcher (built by `launcher`) once
    `launcher_due` says: `ready_needed` workers (default: all) Ready or, through the agent,
    all of them scheduled (not when fewer are needed: an elastic launch's own start timeout
    is short)."""
    agent = getattr(job.spec, "transport", "ssh") == "agent"
    port = AGENT_PORT if agent else int(job.spec.ssh.port)
    children = [*head, headless_service(job, {"ssh": port}), *workers]
    if launcher_due(job, observed, ready_needed=ready_needed, agent=agent and ready_needed is None):
        children.append(launcher())
    return children


# The kind ----------------------------------------------------------------------------------


class LauncherWorkersKind:
    """What a kind with one launcher and sshd workers declares, as a `jobcore.jobs.JobKind`.

    One launcher and spec.worker.replicas workers; a Secret, a ConfigMap, a Service and pods
    as children; the launcher kept after clean-up, for its logs; a Workers column; the
    outcome of a static launch. A kind adds its resource, model, container names and debug
    commands, `validate` and `render`, and may override `interpret` (HorovodJob does, for
    elastic jobs).
    Each replica's container is named after its replica type unless the kind says otherwise;
    `jobcore debug` keeps a worker's command (sshd), so that one can ssh in.
    """

    replica_types: Sequence[str] = (LAUNCHER, WORKER)
    child_resources: Sequence[Resource] = (SECRETS, CONFIGMAPS, SERVICES, PODS)
    containers: Mapping[str, str] = {LAUNCHER: LAUNCHER, WORKER: WORKER}
    debug_commands: Mapping[str, Sequence[str] | None] = {WORKER: None}
    kept_after_cleanup: Sequence[str] = (LAUNCHER,)
    printer_columns: Sequence[Mapping[str, Any]] = (
        {"name": "Workers", "type": "integer", "jsonPath": ".spec.worker.replicas"},
    )

    def replicas(self, job: Job[Any]) -> Mapping[str, int]:
        return {LAUNCHER: 1, WORKER: job.spec.worker.replicas}

    def interpret(self, job: Job[Any], observed: Observed) -> Outcome:
        """The launcher's exit decides; a worker that stops first fails the job. Launched
        through the agent, a launcher that succeeded without reaching every worker its ranks
        need (`_needs_workers`) fails it."""
        names = [worker_name(job, i) for i in range(job.spec.worker.replicas)]
        launcher = observed.get(PODS, launcher_name(job))
        outcome = launcher_outcome(
            launcher,
            {name: observed.get(PODS, name) for name in names},
            launcher_container=self.containers[LAUNCHER],
            worker_container=self.containers[WORKER],
            ssh_port=job.spec.ssh.port,
        )
        if outcome.state != "succeeded" or getattr(job.spec, "transport", "ssh") != "agent":
            return outcome
        reached = launched(launcher, self.containers[LAUNCHER])
        return unlaunched(names, reached, self._needs_workers(job), launcher_name(job)) or outcome

    def _needs_workers(self, job: Job[Any]) -> int | None:
        """How many workers a launch through the agent must have reached for the job to
        succeed: every one; None to check nothing."""
        return int(job.spec.worker.replicas)


def unlaunched(
    workers: Sequence[str], reached: Sequence[str] | None, needed: int | None, launcher: str
) -> Outcome | None:
    """The failure of a launch whose `launcher` pod succeeded through the agent having reached
    (`launched`) fewer of `workers` than the `needed` its ranks need; None if it reached
    enough, or when either count is unknown."""
    if needed is None or reached is None or len(set(workers) & set(reached)) >= needed:
        return None
    missing = [name for name in workers if name not in reached]
    return Outcome(
        "failed",
        WORKERS_NOT_LAUNCHED,
        f"The launcher exited 0, but its launch reached {len(workers) - len(missing)} of "
        f"the {needed} workers its ranks need; never reached: {name_list(missing)}. "
        "The ranks ran elsewhere, likely on the launcher: check its MPI settings.",
        replica_failure=f"Pod[{launcher}] launched nothing on {name_list(missing)}",
    )
