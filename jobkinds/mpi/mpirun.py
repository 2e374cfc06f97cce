"""An MPI launcher's command: wait for every worker, then mpirun (or mpiexec) with its arguments.

Every user-provided string reaches the launcher as a positional argument of `bash -c`, never
as script text. Open MPI copies some of them (`--prefix`, MCA parameters, the launch agent)
into the command its daemons' shell runs on each worker: `openmpi.remote_shell_errors` and
the kind's validation refuse what would act there.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from jobcore.launcher import AGENT_PORT
from jobcore.launcher import SSH_PORT_ENV
from jobcore.launcher import SSH_WAIT_SECONDS
from jobcore.launcher import SSH_WAIT_TIMEOUT_EXIT
from jobcore.launcher import SSHAccess
from jobcore.launcher import Transport
from jobcore.launcher import agent_client_env
from jobcore.launcher import agent_launch_command
from jobcore.launcher import ssh_client_args
from jobcore.launcher import ssh_wait_script
from jobkinds.mpi.flavours import Flavour
from jobkinds.mpi.flavours import agent_shell_env
from jobkinds.mpi.flavours import hydra_callback_env
from jobkinds.mpi.openmpi import open_mpi_env
from jobkinds.mpi.openmpi import open_mpi_env_check
from jobkinds.mpi.openmpi import open_mpi_env_script

HOSTFILE_DIR = "/etc/mpi"
HOSTFILE_KEY = "hostfile"
HOSTFILE = f"{HOSTFILE_DIR}/{HOSTFILE_KEY}"
WAIT_SECONDS = SSH_WAIT_SECONDS
"""How long the launcher waits for every worker to resolve and accept ssh before giving up."""
WAIT_TIMEOUT_EXIT = SSH_WAIT_TIMEOUT_EXIT
"""The launcher's exit code when workers never became reachable (`timeout`'s convention)."""

# The shared wait (`ssh_wait_script`) reads its hostfile and timeout from the environment, which
# a test can point elsewhere; its exit code when giving up is WAIT_TIMEOUT_EXIT. As an MPI's own
# environment scripts do, `mpiHome/bin` goes first on PATH and `mpiHome/lib` on
# LD_LIBRARY_PATH, so the launcher is that installation's and so are the libraries of the ranks
# Hydra starts with the launcher's environment.
_MPI_HOME_SCRIPT = r"""if [ -n "${JOBCORE_MPI_HOME:-}" ]; then
  export PATH="$JOBCORE_MPI_HOME/bin:$PATH"
  export LD_LIBRARY_PATH="$JOBCORE_MPI_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
"""
LAUNCHER_SCRIPT = (
    ssh_wait_script("JOBCORE_MPI_HOSTFILE", HOSTFILE, "JOBCORE_MPI_WAIT_SECONDS")
    + _MPI_HOME_SCRIPT
    + r"""echo "jobcore: all ${#workers[@]} worker(s) reachable; starting: $*"
exec "$@"
"""
)
AGENT_LAUNCHER_SCRIPT = (
    _MPI_HOME_SCRIPT
    + r"""echo "jobcore: starting: $*"
exec "$@"
"""
)
"""With the agent, which has waited for every worker's agent before it runs this."""
_OPEN_MPI_CHECK = open_mpi_env_script("mpirun")
"""Open MPI's launcher refuses, first, an environment it would copy unsafely to the workers."""


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


def launcher_command(
    launcher: Sequence[str], mpi: Flavour, transport: Transport = "ssh", port: int = AGENT_PORT
) -> list[str]:
    """bash runs the wait script, then `exec "$@"` with the launcher as positional args;
    for Open MPI, it first checks the environment (`open_mpi_env_script`). With the agent,
    the agent checks Open MPI's environment (`open_mpi_env_check`) and waits for the
    workers' agents instead, then runs the rest in sh (AGENT_LAUNCHER_SCRIPT is POSIX)."""
    if transport != "agent":
        script = _OPEN_MPI_CHECK + LAUNCHER_SCRIPT if mpi.open_mpi else LAUNCHER_SCRIPT
        return ["/bin/bash", "-c", script, "jobcore-mpi-launcher", *launcher]
    command = ["/bin/sh", "-c", AGENT_LAUNCHER_SCRIPT, "jobcore-mpi-launcher", *launcher]
    check = open_mpi_env_check("mpirun") if mpi.open_mpi else None
    return agent_launch_command(
        command, hostfile=HOSTFILE, timeout=WAIT_SECONDS, port=port, env_check=check
    )


def launcher_env(
    mpi: Flavour,
    *,
    slots_per_host: int,
    ssh: SSHAccess,
    mpi_home: str | None,
    host_network: bool,
    transport: Transport = "ssh",
) -> list[dict[str, Any]]:
    """The launch script's settings and the implementation's: hostfile, slots, ssh options.

    `ConnectionAttempts` rides out a worker's sshd starting late; Open MPI's settings are
    `open_mpi_env`'s. Hydra (MPICH and Intel MPI) is told to bootstrap over ssh with the
    hostfile, each under its own names; MPICH's takes no ssh options and reads them from the
    Secret's ssh config. Unless the launcher shares its node's network, Hydra's proxies call
    it back at its pod's address (`hydra_callback_env`), not at a name. With the agent, each
    is given the agent as its remote shell instead of ssh (`agent_shell_env`), and the agent's
    settings.
    """
    agent = transport == "agent"
    values = {"JOBCORE_MPI_HOSTFILE": HOSTFILE}
    if agent:  # the agent waits, on its own port
        values |= agent_client_env()
    else:
        values |= {"JOBCORE_MPI_WAIT_SECONDS": str(WAIT_SECONDS), SSH_PORT_ENV: str(ssh.port)}
    ssh_args = "" if agent else f"-o ConnectionAttempts=10 {ssh_client_args(ssh)}"
    if mpi_home:
        values["JOBCORE_MPI_HOME"] = mpi_home
    if mpi.open_mpi:
        values |= open_mpi_env(
            hostfile=HOSTFILE, slots_per_host=slots_per_host, ssh_args=ssh_args, agent=agent
        )
    else:
        values |= {
            "HYDRA_LAUNCHER": "ssh",
            "HYDRA_HOST_FILE": HOSTFILE,
            "I_MPI_HYDRA_BOOTSTRAP": "ssh",
            "I_MPI_HYDRA_HOST_FILE": HOSTFILE,
        }
        values |= (
            agent_shell_env(mpi) if agent else {"I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": ssh_args}
        )
        if not host_network:
            values |= hydra_callback_env()
    return [{"name": name, "value": value} for name, value in values.items()]
