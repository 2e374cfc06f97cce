"""Real MPI: MPIJobs run Open MPI 4 and 5, MPICH and Intel MPI over ssh between process pods.

Each implementation comes from `scripts/frameworks.sh`; under CI a missing one fails its tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controllers.sandbox import frameworks
from controllers.sandbox import realjobs
from jobcore import PODS
from jobcore import Client
from jobcore import Controller
from jobcore.testing import ProcessNode
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import require
from jobcore.testing import spec_with
from jobcore.testing import wait_for_end
from jobkinds.mpijob import MPIJobKind
from tests.support.fixtures import controller_fixture
from tests.support.jobdocs import sample
from tests.support.mpioutput import assert_pingpong_on_two_workers
from tests.support.mpioutput import on_two_workers
from tests.support.mpioutput import ranks
from tests.support.realruns import run_to_end

KIND = MPIJobKind()
MPIJOBS = KIND.resource
COMPILED = ["openmpi", "openmpi5", "mpich"]

pytestmark = [pytest.mark.integration]


controller = controller_fixture(KIND)


def program(mpi: str, folder: Path, *, failing_rank: int | None = None) -> list[str]:
    require(frameworks.missing(realjobs.MPIS[mpi].framework))
    return realjobs.mpi_program(mpi, folder, failing_rank=failing_rank)


RunMPI = Callable[..., Awaitable[tuple[dict[str, Any], str]]]
"""`run_mpi(mpi, *, name, failing_rank=None, **changes)`: the `mpi` sample program as MPIJob
`name`, its spec with `changes` (as `spec_with` makes them), run to its end by the test's
controller on its node: its status and launcher log."""


@pytest.fixture
def run_mpi(
    client: Client,
    namespace: str,
    controller: Controller,
    process_node: ProcessNode,
    tmp_path: Path,
) -> RunMPI:
    async def run(
        mpi: str, *, name: str, failing_rank: int | None = None, **changes: Any
    ) -> tuple[dict[str, Any], str]:
        command = program(mpi, tmp_path, failing_rank=failing_rank)
        job = realjobs.mpi_job(mpi, tmp_path, command, name=name, namespace=namespace)
        job["spec"] = spec_with(job["spec"], **changes)
        return await run_to_end(client, process_node, MPIJOBS, job, container="mpi-launcher")

    return run


@pytest.mark.parametrize("mpi", COMPILED)
async def test_two_workers_by_two_slots_allreduce_for_real(run_mpi: RunMPI, mpi: str) -> None:
    status, log = await run_mpi(mpi, name="allreduce")
    assert status["phase"] == "Succeeded", log
    assert ranks(log) == on_two_workers("allreduce"), log


async def test_intel_mpi_pingpong_between_the_two_workers_for_real(run_mpi: RunMPI) -> None:
    status, log = await run_mpi("intel", name="pingpong")
    assert status["phase"] == "Succeeded", log
    assert_pingpong_on_two_workers(log, "pingpong")


@pytest.mark.parametrize("mpi", [*COMPILED, "intel"])
async def test_a_rank_exiting_3_fails_the_job_with_the_launchers_exit_code(
    run_mpi: RunMPI, mpi: str
) -> None:
    status, log = await run_mpi(mpi, name="rank3", failing_rank=2)
    assert status["phase"] == "Failed", log
    failure = condition(status, "ReplicaFailure")
    assert "rank3-launcher" in failure["message"], failure
    assert "exited with error code 3" in failure["message"], (failure, log)


async def test_the_seeds_mpi_flags_are_valid_for_real_open_mpi(run_mpi: RunMPI) -> None:
    """The seed's first example's flags, word for word: mca, mpiHome, extraMPIArgs, sshdPath."""
    seed = sample("mpijob-random-walk")["spec"]
    flags = {"extraMPIArgs": seed["worker"]["extraMPIArgs"]}
    status, log = await run_mpi(
        "openmpi", name="seedflags", mca=seed["mca"], ssh=seed["ssh"], worker=flags
    )
    assert status["phase"] == "Succeeded", log
    assert ranks(log) == on_two_workers("seedflags", slots=3), log


@pytest.mark.usefixtures("controller", "process_node")
async def test_a_worker_killed_mid_run_fails_the_job_and_leaves_nothing_behind(
    client: Client, namespace: str, tmp_path: Path
) -> None:
    program("openmpi", tmp_path)
    job = realjobs.mpi_job(
        "openmpi", tmp_path, ["sleep", "600"], name="killed", namespace=namespace
    )
    await client.create(MPIJOBS, job)

    async def launcher_running() -> bool:
        try:
            pod = await client.get(PODS, "killed-launcher", namespace)
        except Exception:
            return False
        return bool((pod.get("status") or {}).get("phase") == "Running")

    await eventually(launcher_running, timeout=60, interval=0.2)
    victim = await client.get(PODS, "killed-worker-1", namespace)
    netns = "jc-" + victim["metadata"]["uid"].replace("-", "")[:8]
    assert netns in await netns_list()
    await client.delete(PODS, "killed-worker-1", namespace, grace_period_seconds=1)
    status = await wait_for_end(client, MPIJOBS, namespace, "killed")
    assert status["phase"] == "Failed"
    failure = condition(status, "ReplicaFailure")
    assert "killed-worker-1" in failure["message"], failure
    await eventually(lambda: _gone(netns), timeout=20, interval=0.2)


async def _gone(netns: str) -> bool:
    return netns not in await netns_list()


async def netns_list() -> str:
    process = await asyncio.create_subprocess_exec(
        "ip", "netns", "list", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    return out.decode()
