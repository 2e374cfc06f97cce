"""The MPI implementations a launcher may start, and what differs between them.

Open MPI (`mpirun`, ORTE or PRRTE) and the Hydra-based MPICH and Intel MPI (`mpiexec`) differ
in their hostfile, flags and environment; `Flavour` holds what differs. Shared by the T9k and
the Kubeflow MPIJob (and HorovodJob's `mpi` backend): the flavours, the hostfile's lines,
processes per worker, each one's settings for the agent as its remote shell, and reading a
flag's values from an MPI command line (`-N 3`, `--npernode=3`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from jobcore.launcher import AGENT
from jobcore.launcher import AGENT_RSH

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


def agent_shell_env(mpi: Flavour) -> dict[str, str]:
    """The settings that make `mpi`'s launcher start its daemons through jobcore's agent in
    ssh's place (docs/agent.md's table).

    Open MPI 4 and 5 each take a command as their remote shell, under their own names (each
    ignores the other's): `jobcore-agent rsh`. Hydra takes one program path in ssh's role,
    MPICH's as its launcher exec and Intel MPI's as its bootstrap exec: the agent under its
    rsh name (AGENT_RSH).
    """
    if mpi.open_mpi:
        return dict.fromkeys(("OMPI_MCA_plm_rsh_agent", "PRTE_MCA_plm_ssh_agent"), f"{AGENT} rsh")
    if mpi == INTEL_MPI:
        return {"I_MPI_HYDRA_BOOTSTRAP": "ssh", "I_MPI_HYDRA_BOOTSTRAP_EXEC": AGENT_RSH}
    return {"HYDRA_LAUNCHER": "ssh", "HYDRA_LAUNCHER_EXEC": AGENT_RSH}


POD_INTERFACE = "eth0"
"""A pod's own network interface: the name containerd and the kubelet give it (CNI_IFNAME)."""
HYDRA_IFACE_ENV = ("HYDRA_IFACE", "I_MPI_HYDRA_IFACE")
"""MPICH's and Intel MPI's name for mpiexec's `-iface`; each ignores the other's."""


def hydra_callback_env() -> dict[str, str]:
    """Hydra's proxies call mpiexec back at the address of the launcher pod's own interface.

    By default they are handed mpiexec's hostname, bare (`<job>-launcher`), which a worker
    resolves through its search list, namespace first: a Service of that name in the
    namespace (another job's, e.g. one named `<job>-launcher`) would answer instead of the
    launcher. With an interface, MPICH's `--control-port` and Intel MPI's `--upstream-host` are
    that interface's address: no name is looked up. (`-localhost` would do for MPICH only:
    Intel MPI 2021 ignores it.)
    """
    return dict.fromkeys(HYDRA_IFACE_ENV, POD_INTERFACE)


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


def flag_values(args: Sequence[str], flags: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each occurrence of one of `flags` with its value (`-N 3` or `--npernode=3`)."""
    found: list[tuple[str, str | None]] = []
    for i, arg in enumerate(args):
        name, eq, inline = arg.partition("=")
        if name in flags and eq:
            found.append((name, inline))
        elif arg in flags:
            found.append((arg, args[i + 1] if i + 1 < len(args) else None))
    return found


PROCESS_COUNT_FLAGS = ("-np", "--np", "-n", "--n", "-c")
"""mpirun's and mpiexec's flags for the number of ranks."""


def workers_needed(mpi_args: Sequence[str], workers: int, per_worker: int) -> int | None:
    """How many of `workers` hosts, each of `per_worker` slots, a launch must reach for the
    rank count `mpi_args` give (the first `-np`, `-n`, `-c`...): any MPI that oversubscribes
    no host needs that many, whichever it picks. Every worker when no count is given; None
    (unknown) when the count is not a number."""
    counts = flag_values(mpi_args, PROCESS_COUNT_FLAGS)
    if not counts:
        return workers
    count = counts[0][1]
    if count is None or not count.isdigit():
        return None
    return min(workers, -(-int(count) // per_worker))
