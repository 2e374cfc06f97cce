"""MPIJob's children: hostfile, headless Service, worker and launcher pods, launch script.

Split from the kind (`mpijob`) so the launcher's behaviour reads, and runs in tests, on its
own. Open MPI (`mpirun`, ORTE or PRRTE) and the Hydra-based MPICH and Intel MPI (`mpiexec`)
differ in their hostfile, flags and environment; `Flavour` holds what differs. Every
user-provided string reaches the launcher as a positional argument of `bash -c`, never as
script text. Open MPI copies some of them (`--prefix`, MCA parameters, the launch agent) into
the command its daemons' shell runs on each worker: `_mpiargs.remote_shell_errors` and the
kind's validation refuse what would act there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

from jobcore import Object
from jobcore.jobs import Job
from jobcore.launcher import SSH_PORT_ENV
from jobcore.launcher import SSH_WAIT_SECONDS
from jobcore.launcher import SSH_WAIT_TIMEOUT_EXIT
from jobcore.launcher import SSHAccess
from jobcore.launcher import child_meta
from jobcore.launcher import copied_launcher_pod
from jobcore.launcher import headless_service
from jobcore.launcher import hostfile_name
from jobcore.launcher import launcher_name
from jobcore.launcher import ssh_client_args
from jobcore.launcher import ssh_wait_script
from jobcore.launcher import sshd_worker_pod
from jobcore.launcher import worker_host
from jobkinds import _checks
from jobkinds._mpiargs import flag_values

if TYPE_CHECKING:
    from jobkinds.mpijob import MPIJobSpec

WORKER_CONTAINER = "mpi-worker"
"""The template's container that runs sshd on workers and the MPI launcher on the launcher."""
LAUNCHER_CONTAINER = "mpi-launcher"
HOSTFILE_VOLUME = "jobcore-hostfile"
HOSTFILE_DIR = "/etc/mpi"
HOSTFILE_KEY = "hostfile"
HOSTFILE = f"{HOSTFILE_DIR}/{HOSTFILE_KEY}"
WAIT_SECONDS = SSH_WAIT_SECONDS
"""How long the launcher waits for every worker to resolve and accept ssh before giving up."""
WAIT_TIMEOUT_EXIT = SSH_WAIT_TIMEOUT_EXIT
"""The launcher's exit code when workers never became reachable (`timeout`'s convention)."""

Implementation = Literal["OpenMPI", "IntelMPI", "Intel", "MPICH"]
"""spec.mpiImplementation's values; `Intel` is Kubeflow's spelling of `IntelMPI`."""

_SLOTS = re.compile(r"[1-9][0-9]{0,5}")
"""A positive integer in ASCII digits, below a million: what a launcher reads as a slot count."""


@dataclass(frozen=True)
class Flavour:
    """What an MPI implementation's launcher needs that another's does not understand."""

    name: str
    program: str
    """The launcher the script execs, found on PATH (after `mpiHome/bin`)."""
    open_mpi: bool
    """Understands MCA parameters (`-mca`, `spec.mca`), `--prefix` and `-x NAME`."""
    npernode_flags: tuple[str, ...]
    """Its "processes per node" flags; their value is each worker's slot count."""
    hostfile_flags: tuple[str, ...]
    """Flags that name a hostfile: the launcher passes the workers' hostfile itself."""
    slots_format: str
    """One hostfile line, from `host` and `slots`."""


OPEN_MPI = Flavour(
    name="Open MPI",
    program="mpirun",
    open_mpi=True,
    npernode_flags=("-N", "-npernode", "--npernode"),
    hostfile_flags=(
        "-hostfile",
        "--hostfile",
        "-machinefile",
        "--machinefile",
        "-default-hostfile",
    ),
    slots_format="{host} slots={slots}",
)


def _hydra(name: str) -> Flavour:
    """MPICH and Intel MPI launch alike, through Hydra's mpiexec."""
    return Flavour(
        name=name,
        program="mpiexec",
        open_mpi=False,
        npernode_flags=("-ppn", "-perhost"),
        hostfile_flags=("-f", "-hostfile", "-machinefile", "--hostfile", "--machinefile"),
        slots_format="{host}:{slots}",
    )


MPICH = _hydra("MPICH")
INTEL_MPI = _hydra("Intel MPI")
_FLAVOURS: dict[str, Flavour] = {
    "OpenMPI": OPEN_MPI,
    "IntelMPI": INTEL_MPI,
    "Intel": INTEL_MPI,
    "MPICH": MPICH,
}


def flavour(implementation: Implementation) -> Flavour:
    return _FLAVOURS[implementation]


# The shared wait (`ssh_wait_script`) reads its hostfile and timeout from the environment, which
# a test can point elsewhere; its exit code when giving up is WAIT_TIMEOUT_EXIT. As an MPI's own
# environment scripts do, `mpiHome/bin` goes first on PATH and `mpiHome/lib` on
# LD_LIBRARY_PATH, so the launcher is that installation's and so are the libraries of the ranks
# Hydra starts with the launcher's environment.
#
# Hydra's proxies (MPICH, Intel MPI) call the launcher back by its hostname, which cluster DNS
# publishes a moment after the launcher's pod started, so possibly after this script did: under
# Hydra (JOBCORE_MPI_LAUNCHER_HOST set) it also waits, within the same time, until the first
# worker resolves that name, asking it over ssh with the launcher's options (JOBCORE_MPI_SSH_ARGS).
LAUNCHER_SCRIPT = (
    ssh_wait_script("JOBCORE_MPI_HOSTFILE", HOSTFILE, "JOBCORE_MPI_WAIT_SECONDS")
    + r"""if [ -n "${JOBCORE_MPI_LAUNCHER_HOST:-}" ] && [ "${#workers[@]}" -gt 0 ]; then
  read -ra ssh_args <<<"${JOBCORE_MPI_SSH_ARGS:-}"
  lookup="getent hosts $(printf %q "$JOBCORE_MPI_LAUNCHER_HOST")"
  while :; do
    ssh "${ssh_args[@]}" -o BatchMode=yes "${workers[0]}" "$lookup" >/dev/null 2>&1
    case $? in
      0) break ;;
      255) still "worker ${workers[0]} cannot be reached over ssh" ;;
      *) still "worker ${workers[0]} does not resolve the launcher $JOBCORE_MPI_LAUNCHER_HOST" ;;
    esac
    sleep 0.5
  done
fi
if [ -n "${JOBCORE_MPI_HOME:-}" ]; then
  export PATH="$JOBCORE_MPI_HOME/bin:$PATH"
  export LD_LIBRARY_PATH="$JOBCORE_MPI_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
echo "jobcore: all ${#workers[@]} worker(s) reachable; starting: $*"
exec "$@"
"""
)
_OPEN_MPI_SCRIPT = _checks.open_mpi_env_script("mpirun") + LAUNCHER_SCRIPT
"""Open MPI's launcher refuses, first, an environment it would copy unsafely to the workers."""


def slots(extra_mpi_args: Sequence[str], mpi: Flavour = OPEN_MPI) -> int:
    """Processes per worker: the last per-node flag's value in the extra args, else 1.

    Invalid values count as 1 here; `npernode_errors` reports them at validation.
    """
    found = 1
    for _, value in flag_values(extra_mpi_args, mpi.npernode_flags):
        if value is not None and _SLOTS.fullmatch(value):
            found = int(value)
    return found


def npernode_errors(extra_mpi_args: Sequence[str], mpi: Flavour = OPEN_MPI) -> list[str]:
    """What is wrong with the per-node flags (`-N`, `-ppn`, ...): each needs a positive integer."""
    return [
        f"{flag} needs a positive integer value (processes per worker), got "
        + (repr(value) if value is not None else "nothing")
        for flag, value in flag_values(extra_mpi_args, mpi.npernode_flags)
        if value is None or not _SLOTS.fullmatch(value)
    ]


def hostfile_text(hosts: Sequence[str], slots_per_host: int, mpi: Flavour = OPEN_MPI) -> str:
    """One line per worker: `host slots=N` for Open MPI, `host:N` for Hydra."""
    return "".join(mpi.slots_format.format(host=h, slots=slots_per_host) + "\n" for h in hosts)


def launcher_args(
    mpi: Flavour,
    *,
    mpi_home: str | None,
    mca: Mapping[str, str],
    forwarded_env: Sequence[str],
    extra_mpi_args: Sequence[str],
    cmd: Sequence[str],
) -> list[str]:
    """The launcher and its arguments in a fixed order: hostfile, [prefix, MCA, env], the
    user's args, the program.

    Open MPI's `forwarded_env` names are passed with `-x`: processes started over ssh do not
    see the container's environment, so the worker template's env reaches the ranks this way.
    Hydra passes the launcher's whole environment to every rank unasked.
    """
    if not mpi.open_mpi:
        return [mpi.program, "-f", HOSTFILE, *extra_mpi_args, *cmd]
    args = [mpi.program, "--hostfile", HOSTFILE]
    if mpi_home:
        args += ["--prefix", mpi_home]
    for key in sorted(mca):
        args += ["-mca", key, mca[key]]
    for name in forwarded_env:
        args += ["-x", name]
    return [*args, *extra_mpi_args, *cmd]


def launcher_command(launcher: Sequence[str], mpi: Flavour) -> list[str]:
    """bash runs the wait script, then `exec "$@"` with the launcher as positional args;
    for Open MPI, it first checks the environment (`_checks.open_mpi_env_script`)."""
    script = _OPEN_MPI_SCRIPT if mpi.open_mpi else LAUNCHER_SCRIPT
    return ["/bin/bash", "-c", script, "jobcore-mpi-launcher", *launcher]


def launcher_env(
    mpi: Flavour,
    *,
    slots_per_host: int,
    ssh: SSHAccess,
    mpi_home: str | None,
    launcher_host: str,
) -> list[dict[str, Any]]:
    """The launch script's settings and the implementation's: hostfile, slots, ssh options.

    `ConnectionAttempts` rides out a worker's sshd starting late; Open MPI's settings are
    `open_mpi_env`'s. Hydra (MPICH and Intel MPI) is told to bootstrap over ssh with the
    hostfile, each under its own names; MPICH's takes no ssh options and reads them from the
    Secret's ssh config. Under Hydra the script also waits until the workers resolve
    `launcher_host`, the launcher's hostname.
    """
    ssh_args = f"-o ConnectionAttempts=10 {ssh_client_args(ssh)}"
    values = {
        "JOBCORE_MPI_HOSTFILE": HOSTFILE,
        "JOBCORE_MPI_WAIT_SECONDS": str(WAIT_SECONDS),
        SSH_PORT_ENV: str(ssh.port),
    }
    if mpi_home:
        values["JOBCORE_MPI_HOME"] = mpi_home
    if mpi.open_mpi:
        values |= open_mpi_env(hostfile=HOSTFILE, slots_per_host=slots_per_host, ssh_args=ssh_args)
    else:
        values |= {
            "JOBCORE_MPI_LAUNCHER_HOST": launcher_host,
            "JOBCORE_MPI_SSH_ARGS": ssh_args,
            "HYDRA_LAUNCHER": "ssh",
            "HYDRA_HOST_FILE": HOSTFILE,
            "I_MPI_HYDRA_BOOTSTRAP": "ssh",
            "I_MPI_HYDRA_HOST_FILE": HOSTFILE,
            "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": ssh_args,
        }
    return [{"name": name, "value": value} for name, value in values.items()]


def open_mpi_env(*, hostfile: str, slots_per_host: int, ssh_args: str) -> dict[str, str]:
    """Open MPI's hostfile, slots per host and ssh options, under the names of Open MPI 4
    (ORTE) and of Open MPI 5 (PRRTE): each ignores the other's.

    Without `keep_fqdn_hostnames` both cut `w-0.job.ns.svc.cluster.local` to `w-0`, which does
    not resolve.
    """
    return {
        "OMPI_MCA_orte_default_hostfile": hostfile,
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_orte_set_default_slots": str(slots_per_host),
        "OMPI_MCA_plm_rsh_args": ssh_args,
        "PRTE_MCA_prte_default_hostfile": hostfile,
        "PRTE_MCA_prte_keep_fqdn_hostnames": "true",
        "PRTE_MCA_prte_set_default_slots": str(slots_per_host),
        "PRTE_MCA_plm_ssh_args": ssh_args,
    }


# Names -----------------------------------------------------------------------------------


def worker_hosts(job: Job[MPIJobSpec]) -> list[str]:
    """The workers' DNS names through the headless Service, as the hostfile lists them."""
    return [worker_host(job, i) for i in range(job.spec.worker.replicas)]


# Children ------------------------------------------------------------------------------


def hostfile_configmap(job: Job[MPIJobSpec]) -> Object:
    mpi = flavour(job.spec.mpi_implementation)
    per_host = slots(job.spec.worker.extra_mpi_args, mpi)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": child_meta(job, hostfile_name(job), job.labels()),
        "data": {HOSTFILE_KEY: hostfile_text(worker_hosts(job), per_host, mpi)},
    }


def service(job: Job[MPIJobSpec]) -> Object:
    """The headless Service; under Hydra it publishes the launcher too (see `launcher_pod`)."""
    headless = headless_service(job, job.spec.ssh.port)
    if not flavour(job.spec.mpi_implementation).open_mpi:
        headless["spec"]["selector"] = job.labels()
    return headless


def worker_pod(job: Job[MPIJobSpec], index: int, ssh: SSHAccess) -> Object:
    """sshd in place of the mpi-worker container's command; Ready once its port answers.

    Under Hydra the Service's domain is searched, so the launcher's bare hostname resolves.
    """
    pod = sshd_worker_pod(
        job,
        index,
        container=WORKER_CONTAINER,
        ssh=ssh,
    )
    if not flavour(job.spec.mpi_implementation).open_mpi:
        dns = pod["spec"].get("dnsConfig") or {}
        searches = [*dns.get("searches", ()), job.service_domain()]
        pod["spec"]["dnsConfig"] = {**dns, "searches": searches}  # the template's is shared
    return pod


def launcher_pod(job: Job[MPIJobSpec], ssh: SSHAccess) -> Object:
    """One container copied from mpi-worker (image, resources, env, mounts...) running the
    implementation's launcher.

    The template's other containers stay on the workers; its volumes, init containers and
    pod-level settings apply to the launcher too (T9k: the template configures both). Hydra's
    proxies on the workers call back to the launcher by its hostname, so under Hydra the
    launcher is named in the job's Service domain, as the workers are.
    """
    spec = job.spec
    mpi = flavour(spec.mpi_implementation)

    def command(worker: Mapping[str, Any]) -> list[str]:
        # A fieldRef or resourceFieldRef differs per pod: each rank keeps its worker's own value.
        shared = [
            str(e["name"])
            for e in worker.get("env", ())
            if "name" in e and not {"fieldRef", "resourceFieldRef"} & set(e.get("valueFrom") or {})
        ]
        launcher = launcher_args(
            mpi,
            mpi_home=spec.mpi_home,
            mca=spec.mca,
            forwarded_env=shared,
            extra_mpi_args=spec.worker.extra_mpi_args,
            cmd=spec.worker.cmd,
        )
        return launcher_command(launcher, mpi)

    pod = copied_launcher_pod(
        job,
        worker_container=WORKER_CONTAINER,
        launcher_container=LAUNCHER_CONTAINER,
        mount_path=spec.ssh.ssh_auth_mount_path,
        config_volume=HOSTFILE_VOLUME,
        config_dir=HOSTFILE_DIR,
        config_map={"name": hostfile_name(job)},
        env=launcher_env(
            mpi,
            slots_per_host=slots(spec.worker.extra_mpi_args, mpi),
            ssh=ssh,
            mpi_home=spec.mpi_home,
            launcher_host=launcher_name(job),
        ),
        command=command,
    )
    for key in ("hostname", "subdomain"):
        pod["spec"].pop(key, None)
    if not mpi.open_mpi:
        pod["spec"].update(hostname=launcher_name(job), subdomain=job.name)
    return pod
