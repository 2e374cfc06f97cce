"""Under Hydra (MPICH, Intel MPI) the launch script waits until a worker resolves the
launcher's hostname, which Hydra's proxies call back: a cluster's DNS publishes it only once
the launcher's pod is Ready, after the script started."""

from __future__ import annotations

import subprocess
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
from jobkinds.mpi.mpirun import WAIT_TIMEOUT_EXIT
from jobkinds.mpi.mpirun import launcher_command

SSH_ARGS = "-o ConnectionAttempts=10 -i /root/.ssh/id_ed25519 -p 22"

FAKE_SSH = """#!/bin/bash
# Each call appends its arguments to ssh.calls; exits with the next code of ssh.codes (then 0).
printf '%s|' "$@" >>"{folder}/ssh.calls"
echo >>"{folder}/ssh.calls"
read -r code rest <"{folder}/ssh.codes" || code=0
echo "$rest" >"{folder}/ssh.codes"
exit "${{code:-0}}"
"""


@pytest.fixture
def ssh_port() -> Iterator[int]:
    with accepting_connections(0) as port:
        yield port


def launch(
    tmp_path: Path, port: int, codes: str, *, mpi: Flavour, wait: int = 10
) -> subprocess.CompletedProcess[str]:
    """The launch script with one worker on 127.0.0.1 and a stand-in ssh answering `codes`."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(hostfile_text(["127.0.0.1"], 2, mpi))
    (tmp_path / "ssh.codes").write_text(codes + "\n")
    env = {
        "JOBCORE_MPI_HOSTFILE": str(hostfile),
        "JOBCORE_MPI_WAIT_SECONDS": str(wait),
        SSH_PORT_ENV: str(port),
    }
    if not mpi.open_mpi:
        env |= {"JOBCORE_MPI_LAUNCHER_HOST": "pi-launcher", "JOBCORE_MPI_SSH_ARGS": SSH_ARGS}
    return run_command(
        launcher_command([mpi.program, "./prog"], mpi),
        tmp_path,
        programs={
            "ssh": FAKE_SSH.format(folder=tmp_path),
            mpi.program: '#!/bin/bash\necho "started $*"\n',
        },
        env=env,
    )


def ssh_calls(tmp_path: Path) -> list[list[str]]:
    calls = tmp_path / "ssh.calls"
    lines = calls.read_text().splitlines() if calls.exists() else []
    return [line.split("|")[:-1] for line in lines]


def test_hydra_starts_once_the_worker_resolves_the_launcher(tmp_path: Path, ssh_port: int) -> None:
    result = launch(tmp_path, ssh_port, "2 2 0", mpi=INTEL_MPI)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        lines.count("jobcore: worker 127.0.0.1 does not resolve the launcher pi-launcher; waiting")
        == 1
    )
    assert lines[-1] == "started ./prog", lines
    lookup = [*SSH_ARGS.split(), "-o", "BatchMode=yes", "127.0.0.1", "getent hosts pi-launcher"]
    assert ssh_calls(tmp_path) == [lookup] * 3


def test_hydra_gives_up_when_the_worker_cannot_be_reached(tmp_path: Path, ssh_port: int) -> None:
    result = launch(tmp_path, ssh_port, " ".join(["255"] * 20), mpi=MPICH, wait=1)
    assert result.returncode == WAIT_TIMEOUT_EXIT
    assert "started" not in result.stdout
    assert "gave up after 1s: worker 127.0.0.1 cannot be reached over ssh" in result.stderr


def test_open_mpi_does_not_wait_for_its_own_name(tmp_path: Path, ssh_port: int) -> None:
    """Open MPI's daemons call mpirun back by address."""
    result = launch(tmp_path, ssh_port, "2", mpi=OPEN_MPI)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "started ./prog"
    assert ssh_calls(tmp_path) == []
