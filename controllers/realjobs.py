"""Sample jobs that run real programs on the process-backed node, one per kind and MPI.

Shared by `jobcore sandbox --real` and the real-tier tests, so what the sandbox shows is what
CI proves. Each job runs as root on host binaries from `scripts/frameworks.sh`'s installs
(`controllers.frameworks`), with its programs written into a folder every pod can read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controllers import frameworks
from controllers.allreduce import compile_allreduce
from jobcore import Object, Resource

MPIJOBS = Resource("batch.tensorstack.dev", "v1beta1", "MPIJob", "mpijobs")
ROOT_ENV = [
    {"name": "OMPI_ALLOW_RUN_AS_ROOT", "value": "1"},
    {"name": "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "value": "1"},
]
"""Open MPI refuses to run as root unless told; the process-backed node runs pods as root."""


@dataclass(frozen=True)
class MPI:
    """An MPI the sandbox and tests run: its spec.mpiImplementation and its install."""

    implementation: str
    framework: str
    per_node_flag: str


MPIS = {
    "openmpi": MPI("OpenMPI", "openmpi4", "-N"),
    "openmpi5": MPI("OpenMPI", "openmpi5", "-N"),
    "mpich": MPI("MPICH", "mpich", "-ppn"),
    "intel": MPI("IntelMPI", "intel", "-ppn"),
}
"""The `--mpi` choices: Open MPI 4.1 (Debian), Open MPI 5, MPICH and Intel MPI (PyPI)."""


def mpi_program(mpi: str, folder: Path, *, failing_rank: int | None = None) -> list[str]:
    """What the job's ranks run: Intel MPI's own PingPong benchmark (impi-rt ships no
    compiler) between the two workers, else the allreduce; `failing_rank` then exits 3."""
    home = frameworks.home(MPIS[mpi].framework)
    if mpi == "intel":
        if failing_rank is None:
            # Ranks 0 and 2 ping-pong (one per worker) while the others wait; 17 sizes up to
            # 64 KiB, 20 rounds each, as four busy-polling ranks on two cores are slow.
            return ["IMB-MPI1", "-map", "2x2", "-msglog", "0:16", "-iter", "20", "PingPong"]
        script = folder / "exit3.sh"
        script.write_text(f'#!/bin/sh\n[ "$PMI_RANK" = {failing_rank} ] && exit 3\nexit 0\n')
        script.chmod(0o755)
        folder.chmod(0o755)
        return [str(script)]
    binary = folder / "allreduce"
    if not binary.exists():
        compile_allreduce(folder, home / "bin" / "mpicc")
    return [str(binary)] + ([str(failing_rank)] if failing_rank is not None else [])


def mpi_job(
    mpi: str,
    folder: Path,
    command: list[str],
    *,
    name: str,
    namespace: str,
    workers: int = 2,
    slots: int = 2,
) -> Object:
    """An MPIJob of `workers` x `slots` ranks running `command` with the chosen MPI."""
    chosen = MPIS[mpi]
    home = str(frameworks.home(chosen.framework))
    return {
        "apiVersion": MPIJOBS.api_version,
        "kind": MPIJOBS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "mpiImplementation": chosen.implementation,
            "mpiHome": home,
            "worker": {
                "replicas": workers,
                "extraMPIArgs": [chosen.per_node_flag, str(slots)],
                "cmd": command,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "mpi-worker",
                                "image": "host",
                                "workingDir": str(folder),
                                "env": ROOT_ENV,
                            }
                        ]
                    }
                },
            },
            "ssh": {"sshdPath": "/usr/sbin/sshd"},
        },
    }
