"""MPIJob's children: hostfile, headless Service, worker and launcher pods, mpirun script.

Split from the kind (`mpijob`) so the launcher's behaviour reads, and runs in tests, on its
own. Every user-provided string reaches mpirun as a positional argument of `bash -c`, never
as script text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobcore import Job, Object
from jobkinds import _launch, _ssh
from jobkinds._launch import hostfile_name, meta, worker_host

if TYPE_CHECKING:
    from jobkinds.mpijob import MPIJobSpec

WORKER_CONTAINER = "mpi-worker"
"""The template's container that runs sshd on workers and mpirun on the launcher."""
LAUNCHER_CONTAINER = "mpi-launcher"
SSH_VOLUME = "jobcore-ssh"
HOSTFILE_VOLUME = "jobcore-hostfile"
HOSTFILE_DIR = "/etc/mpi"
HOSTFILE_KEY = "hostfile"
HOSTFILE = f"{HOSTFILE_DIR}/{HOSTFILE_KEY}"
WAIT_SECONDS = _ssh.WAIT_SECONDS
"""How long the launcher waits for every worker to resolve and accept ssh before giving up."""
WAIT_TIMEOUT_EXIT = _ssh.WAIT_TIMEOUT_EXIT
"""The launcher's exit code when workers never became reachable (`timeout`'s convention)."""

NPERNODE_FLAGS = ("-N", "-npernode", "--npernode")
"""mpirun's "processes per node" flags; their value is each worker's slot count."""
_SLOTS = re.compile(r"[1-9][0-9]{0,5}")
"""A positive integer in ASCII digits, below a million: what mpirun reads as a slot count."""
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
        if value is not None and _SLOTS.fullmatch(value):
            found = int(value)
    return found


def npernode_errors(extra_mpi_args: Sequence[str]) -> list[str]:
    """What is wrong with the `-N`/`--npernode` flags: each needs a positive integer."""
    return [
        f"{flag} needs a positive integer value (processes per worker), got "
        + (repr(value) if value is not None else "nothing")
        for flag, value in _flag_values(extra_mpi_args, NPERNODE_FLAGS)
        if value is None or not _SLOTS.fullmatch(value)
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


def worker_hosts(job: Job[MPIJobSpec]) -> list[str]:
    """The workers' DNS names through the headless Service, as the hostfile lists them."""
    return [worker_host(job, i) for i in range(job.spec.worker.replicas)]


# Children ------------------------------------------------------------------------------


def hostfile_configmap(job: Job[MPIJobSpec]) -> Object:
    per_host = slots(job.spec.worker.extra_mpi_args)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(job, hostfile_name(job), job.labels()),
        "data": {HOSTFILE_KEY: hostfile_text(worker_hosts(job), per_host)},
    }


def worker_pod(job: Job[MPIJobSpec], index: int) -> Object:
    """sshd in place of the mpi-worker container's command; Ready once port 22 answers."""
    ssh = job.spec.ssh
    return _launch.sshd_worker_pod(
        job,
        index,
        container=WORKER_CONTAINER,
        ssh_volume=SSH_VOLUME,
        sshd_path=ssh.sshd_path,
        mount_path=ssh.ssh_auth_mount_path,
    )


def launcher_pod(job: Job[MPIJobSpec]) -> Object:
    """One container copied from mpi-worker (image, resources, env, mounts...) running mpirun.

    The template's other containers stay on the workers; its volumes, init containers and
    pod-level settings apply to the launcher too (T9k: the template configures both).
    """
    spec = job.spec

    def command(worker: Mapping[str, Any]) -> list[str]:
        # A fieldRef or resourceFieldRef differs per pod: each rank keeps its worker's own value.
        shared = [
            str(e["name"])
            for e in worker.get("env", ())
            if "name" in e and not {"fieldRef", "resourceFieldRef"} & set(e.get("valueFrom") or {})
        ]
        mpirun = mpirun_args(
            mpi_home=spec.mpi_home,
            mca=spec.mca,
            forwarded_env=shared,
            extra_mpi_args=spec.worker.extra_mpi_args,
            cmd=spec.worker.cmd,
        )
        return launcher_command(mpirun)

    pod = _launch.copied_launcher_pod(
        job,
        worker_container=WORKER_CONTAINER,
        launcher_container=LAUNCHER_CONTAINER,
        ssh_volume=SSH_VOLUME,
        mount_path=spec.ssh.ssh_auth_mount_path,
        config_volume=HOSTFILE_VOLUME,
        config_dir=HOSTFILE_DIR,
        config_map={"name": hostfile_name(job)},
        env=launcher_env(
            slots_per_host=slots(spec.worker.extra_mpi_args),
            ssh_mount_path=spec.ssh.ssh_auth_mount_path,
        ),
        command=command,
    )
    for key in ("hostname", "subdomain"):
        pod["spec"].pop(key, None)
    return pod
