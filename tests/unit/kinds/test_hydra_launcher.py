"""No MPI's launch script waits for its own name: Open MPI's daemons call mpirun back by
address, and so do Hydra's proxies (MPICH, Intel MPI), told the launcher pod's interface."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobcore.launcher import SSH_PORT_ENV
from jobcore.testing import accepting_connections
from jobcore.testing import run_command
from jobkinds.mpi.flavours import INTEL_MPI
from jobkinds.mpi.flavours import MPICH
from jobkinds.mpi.flavours import OPEN_MPI
from jobkinds.mpi.flavours import Flavour
from jobkinds.mpi.flavours import hostfile_text
from jobkinds.mpi.mpirun import launcher_command

RECORDING_SSH = '#!/bin/bash\necho "$*" >>"{folder}/ssh.calls"\n'


@pytest.fixture
def ssh_port() -> Iterator[int]:
    with accepting_connections(0) as port:
        yield port


@pytest.mark.parametrize("mpi", [OPEN_MPI, MPICH, INTEL_MPI], ids=lambda mpi: mpi.name)
def test_no_launcher_waits_for_its_own_name(tmp_path: Path, ssh_port: int, mpi: Flavour) -> None:
    """One worker on 127.0.0.1 accepting connections: the launcher starts at once, with no ssh
    call of its own."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(hostfile_text(["127.0.0.1"], 2, mpi))
    env = {"JOBCORE_MPI_HOSTFILE": str(hostfile), SSH_PORT_ENV: str(ssh_port)}
    result = run_command(
        launcher_command([mpi.program, "./prog"], mpi),
        tmp_path,
        programs={
            "ssh": RECORDING_SSH.format(folder=tmp_path),
            mpi.program: '#!/bin/bash\necho "started $*"\n',
        },
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "started ./prog"
    assert not (tmp_path / "ssh.calls").exists()
