"""MPIJob's children: hostfile, headless Service, worker and launcher pods, mpirun script.

Split from the kind (`mpijob`) so the launcher's behaviour reads, and runs in tests, on its
own. Every user-provided string reaches mpirun as a positional argument of `bash -c`, never
as script text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobcore import Job, Object
from jobkinds import _ssh

if TYPE_CHECKING:
    from jobkinds.mpijob import MPIJobSpec

LAUNCHER = "launcher"
WORKER = "worker"
WORKER_CONTAINER = "mpi-worker"
"""The template's container that runs sshd on workers and mpirun on the launcher."""
LAUNCHER_CONTAINER = "mpi-launcher"
SSH_VOLUME = "jobcore-ssh"
HOSTFILE_VOLUME = "jobcore-hostfile"
DEBUG_LAUNCHER_COMMAND = ("sleep", "inf")
"""T9k's default launcher command in debug mode; workers keep running sshd."""
HOSTFILE_DIR = "/etc/mpi"
HOSTFILE_KEY = "hostfile"
HOSTFILE = f"{HOSTFILE_DIR}/{HOSTFILE_KEY}"
WAIT_SECONDS = _ssh.WAIT_SECONDS
"""How long the launcher waits for every worker to resolve and accept ssh before giving up."""
WAIT_TIMEOUT_EXIT = _ssh.WAIT_TIMEOUT_EXIT
"""The launcher's exit code when workers never became reachable (`timeout`'s convention)."""

NPERNODE_FLAGS = ("-N", "-npernode", "--npernode")
"""mpirun's "processes per node" flags; their value is each worker's slot count."""
HOSTFILE_FLAGS = ("-hostfile", "--hostfile", "-machinefile", "--machinefile", "-default-hostfile")

# The shared wait (jobkinds/_ssh.py) reads its hostfile and timeout from the environment, which
# a test can point elsewhere; its exit code when giving up is WAIT_TIMEOUT_EXIT.
LAUNCHER_SCRIPT = (
    _ssh.wait_script("JOBCORE_MPI_HOSTFILE", HOSTFILE, "JOBCORE_MPI_WAIT_SECONDS")
    + r"""echo "jobcore: all ${#workers[@]} worker(s) reachable; starting: mpirun $*"
exec mpirun "$@"
"""
)


def slots(extra_mpi_args: Sequence[str]) -> int:
    """Processes per worker: the last `-N`/`--npernode` value in the extra args, else 1.

    Invalid values count as 1 here; `npernode_errors` reports them at validation.
    """
    found = 1
    for _, value in _flag_values(extra_mpi_args, NPERNODE_FLAGS):
        if value is not None and value.isdigit() and int(value) > 0:
            found = int(value)
    return found


def npernode_errors(extra_mpi_args: Sequence[str]) -> list[str]:
    """What is wrong with the `-N`/`--npernode` flags: each needs a positive integer."""
    return [
        f"{flag} needs a positive integer value (processes per worker), got "
        + (repr(value) if value is not None else "nothing")
        for flag, value in _flag_values(extra_mpi_args, NPERNODE_FLAGS)
        if value is None or not value.isdigit() or int(value) < 1
    ]


def _flag_values(args: Sequence[str], flags: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each occurrence of one of `flags` with its value (`-N 3` or `--npernode=3`)."""
    found: list[tuple[str, str | None]] = []
    for i, arg in enumerate(args):
        name, eq, inline = arg.partition("=")
        if name in flags and eq:
            found.append((name, inline))
        elif arg in flags:
            found.append((arg, args[i + 1] if i + 1 < len(args) else None))
    return found


def hostfile_text(hosts: Sequence[str], slots_per_host: int) -> str:
    """Open MPI's hostfile: one `host slots=N` line per worker."""
    return "".join(f"{host} slots={slots_per_host}\n" for host in hosts)


def mpirun_args(
    *,
    mpi_home: str | None,
    mca: Mapping[str, str],
    forwarded_env: Sequence[str],
    extra_mpi_args: Sequence[str],
    cmd: Sequence[str],
) -> list[str]:
    """mpirun's arguments in a fixed order: hostfile, prefix, MCA, env, user args, program.

    `forwarded_env` names are passed with `-x`: processes started over ssh do not see the
    container's environment, so the worker template's env reaches the ranks this way.
    """
    args = ["--hostfile", HOSTFILE]
    if mpi_home:
        args += ["--prefix", mpi_home]
    for key in sorted(mca):
        args += ["-mca", key, mca[key]]
    for name in forwarded_env:
        args += ["-x", name]
    return [*args, *extra_mpi_args, *cmd]


def launcher_command(mpirun: Sequence[str]) -> list[str]:
    """bash runs the wait script, then `exec mpirun "$@"` with `mpirun` as positional args."""
    return ["/bin/bash", "-c", LAUNCHER_SCRIPT, "jobcore-mpi-launcher", *mpirun]


def launcher_env(*, slots_per_host: int, ssh_mount_path: str) -> list[dict[str, Any]]:
    """Environment for Open MPI 4 (ORTE) and 5 (PRRTE): each ignores the other's names.

    Without `keep_fqdn_hostnames` ORTE cuts `w-0.job.ns.svc` to `w-0`, which does not resolve;
    `ConnectionAttempts` rides out a worker's sshd starting late.
    """
    ssh_args = f"-o ConnectionAttempts=10 {_ssh.client_args(ssh_mount_path)}"
    values = {
        "OMPI_MCA_orte_default_hostfile": HOSTFILE,
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_orte_set_default_slots": str(slots_per_host),
        "OMPI_MCA_plm_rsh_args": ssh_args,
        "PRTE_MCA_prte_default_hostfile": HOSTFILE,
        "PRTE_MCA_prte_keep_fqdn_hostnames": "true",
        "PRTE_MCA_prte_set_default_slots": str(slots_per_host),
        "PRTE_MCA_plm_ssh_args": ssh_args,
        "JOBCORE_MPI_HOSTFILE": HOSTFILE,
        "JOBCORE_MPI_WAIT_SECONDS": str(WAIT_SECONDS),
    }
    return [{"name": name, "value": value} for name, value in values.items()]


# Names -----------------------------------------------------------------------------------


def worker_name(job: Job[Any], index: int) -> str:
    return f"{job.name}-worker-{index}"


def launcher_name(job: Job[Any]) -> str:
    return f"{job.name}-launcher"


def ssh_secret_name(job: Job[Any]) -> str:
    return f"{job.name}-ssh"


def hostfile_name(job: Job[Any]) -> str:
    return f"{job.name}-hostfile"


def worker_hosts(job: Job[MPIJobSpec]) -> list[str]:
    """The workers' DNS names through the headless Service, as the hostfile lists them."""
    return [
        f"{worker_name(job, i)}.{job.name}.{job.namespace}.svc"
        for i in range(job.spec.worker.replicas)
    ]


# Children ------------------------------------------------------------------------------


def _meta(job: Job[Any], name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": job.namespace, "labels": dict(labels)}


def hostfile_configmap(job: Job[MPIJobSpec]) -> Object:
    per_host = slots(job.spec.worker.extra_mpi_args)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(job, hostfile_name(job), job.labels()),
        "data": {HOSTFILE_KEY: hostfile_text(worker_hosts(job), per_host)},
    }


def service(job: Job[MPIJobSpec]) -> Object:
    """Headless, publishing workers before they are Ready so their names resolve early."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(job, job.name, job.labels()),
        "spec": {
            "clusterIP": "None",
            "selector": job.labels(WORKER),
            "publishNotReadyAddresses": True,
            "ports": [{"name": "ssh", "port": _ssh.SSH_PORT, "targetPort": _ssh.SSH_PORT}],
        },
    }


def paused(job: Job[Any]) -> bool:
    mode = job.spec.run_mode
    return bool(mode and mode.pause and mode.pause.enabled)


def debugging(job: Job[Any]) -> bool:
    mode = job.spec.run_mode
    return bool(mode and mode.debug and mode.debug.enabled)


def _debug_command(job: Job[Any], replica_type: str) -> tuple[list[str] | None, bool] | None:
    """In debug mode: the replica's command (None = the kind's default) and skipInitContainer."""
    if not debugging(job):
        return None
    mode = job.spec.run_mode
    for replica in mode.debug.replica_specs or ():
        if replica.type == replica_type:
            return replica.command, replica.skip_init_container
    return None, False


def _pod(job: Job[MPIJobSpec], replica_type: str, index: int, name: str) -> Object:
    """A pod from the worker template, labelled for `replica_type`; containers left to adapt."""
    template = job.spec.worker.template
    metadata = template.metadata
    labels = {**((metadata and metadata.labels) or {}), **job.labels(replica_type, index)}
    meta = _meta(job, name, labels)
    if metadata and metadata.annotations:
        meta["annotations"] = dict(metadata.annotations)
    spec = template.spec.to_api()
    spec["volumes"] = [
        *spec.get("volumes", ()),
        _ssh.secret_volume(SSH_VOLUME, ssh_secret_name(job)),
    ]
    debug = _debug_command(job, replica_type)
    if debug is not None and debug[1]:
        spec.pop("initContainers", None)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _ssh_mount(job: Job[MPIJobSpec]) -> dict[str, Any]:
    return {"name": SSH_VOLUME, "mountPath": job.spec.ssh.ssh_auth_mount_path, "readOnly": True}


def worker_pod(job: Job[MPIJobSpec], index: int) -> Object:
    """sshd in place of the mpi-worker container's command; Ready once port 22 answers."""
    ssh = job.spec.ssh
    pod = _pod(job, WORKER, index, worker_name(job, index))
    spec = pod["spec"]
    spec["hostname"] = worker_name(job, index)
    spec["subdomain"] = job.name
    # A restarted worker cannot rejoin a running mpirun, so by default a failure is final.
    spec["restartPolicy"] = job.spec.worker.template.spec.restart_policy or "Never"
    debug = _debug_command(job, WORKER)
    custom = debug[0] if debug else None
    for container in spec["containers"]:
        if container["name"] != WORKER_CONTAINER:
            continue
        container.pop("args", None)
        container["command"] = custom or _ssh.sshd_command(ssh.sshd_path, ssh.ssh_auth_mount_path)
        container["volumeMounts"] = [*container.get("volumeMounts", ()), _ssh_mount(job)]
        container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
        if custom:  # a debug command need not serve ssh: no probe that can never pass
            container.pop("readinessProbe", None)
        else:
            container["readinessProbe"] = {
                "tcpSocket": {"port": _ssh.SSH_PORT},
                "periodSeconds": 2,
                "failureThreshold": 3,
            }
    return pod


_NOT_ON_LAUNCHER = (
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
"""Fields of the mpi-worker container that belong to sshd, not to mpirun."""


def launcher_pod(job: Job[MPIJobSpec]) -> Object:
    """One container copied from mpi-worker (image, resources, env, mounts...) running mpirun.

    The template's other containers stay on the workers; its volumes, init containers and
    pod-level settings apply to the launcher too (T9k: the template configures both).
    """
    spec = job.spec
    pod = _pod(job, LAUNCHER, 0, launcher_name(job))
    pod_spec = pod["spec"]
    pod_spec["restartPolicy"] = "Never"
    for key in ("hostname", "subdomain"):
        pod_spec.pop(key, None)
    pod_spec["volumes"].append({"name": HOSTFILE_VOLUME, "configMap": {"name": hostfile_name(job)}})
    worker = next(c for c in pod_spec["containers"] if c["name"] == WORKER_CONTAINER)
    user_env = list(worker.get("env", ()))
    user_names = [str(e["name"]) for e in user_env if "name" in e]
    # A fieldRef or resourceFieldRef differs per pod: each rank keeps its worker's own value.
    shared = [
        str(e["name"])
        for e in user_env
        if "name" in e and not {"fieldRef", "resourceFieldRef"} & set(e.get("valueFrom") or {})
    ]
    ours = launcher_env(
        slots_per_host=slots(spec.worker.extra_mpi_args),
        ssh_mount_path=spec.ssh.ssh_auth_mount_path,
    )
    debug = _debug_command(job, LAUNCHER)
    if debug is not None:
        command = list(debug[0] or DEBUG_LAUNCHER_COMMAND)
    else:
        mpirun = mpirun_args(
            mpi_home=spec.mpi_home,
            mca=spec.mca,
            forwarded_env=shared,
            extra_mpi_args=spec.worker.extra_mpi_args,
            cmd=spec.worker.cmd,
        )
        command = launcher_command(mpirun)
    container = {k: v for k, v in worker.items() if k not in _NOT_ON_LAUNCHER}
    container.update(
        name=LAUNCHER_CONTAINER,
        command=command,
        # The user's own value of one of our variables wins.
        env=[*(e for e in ours if e["name"] not in user_names), *user_env],
        volumeMounts=[
            *worker.get("volumeMounts", ()),
            _ssh_mount(job),
            {"name": HOSTFILE_VOLUME, "mountPath": HOSTFILE_DIR, "readOnly": True},
        ],
    )
    container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
    pod_spec["containers"] = [container]
    return pod
