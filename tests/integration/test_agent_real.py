"""Real MPI without ssh: MPIJobs launched through jobcore's agent between process pods.

The agent is built by `scripts/agent.sh` (Go, from Debian's toolchain); the node runs the
init container that copies it into each pod, the workers' agents, and the launcher's MPI
with the agent as its remote shell. No sshd runs anywhere.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controllers import frameworks
from controllers import realjobs
from jobcore import PODS
from jobcore import Client
from jobcore import Controller
from jobcore.jobs import AgentSource
from jobcore.launcher import launched
from jobcore.testing import ProcessNode
from jobcore.testing import condition
from jobcore.testing import job_controller
from jobcore.testing import require
from jobcore.testing import spec_with
from jobkinds.mpijob import MPIJobKind
from tests.mpioutput import on_two_workers
from tests.mpioutput import ranks
from tests.realruns import run_to_end

KIND = MPIJobKind()

pytestmark = [pytest.mark.integration]


@pytest.fixture
async def controller(
    client: Client, namespace: str, agent_binary: str
) -> AsyncIterator[Controller]:
    # The process node ignores images: the init container runs the host's agent.
    agent = AgentSource(image="jobcore:test", path=agent_binary)
    async with job_controller(client, KIND, namespace=namespace, agent=agent) as controller:
        yield controller


async def run_agent_mpi(
    client: Client, node: ProcessNode, namespace: str, folder: Path, mpi: str, **changes: Any
) -> tuple[dict[str, Any], str]:
    require(frameworks.missing(realjobs.MPIS[mpi].framework))
    command = realjobs.mpi_program(mpi, folder, failing_rank=changes.pop("failing_rank", None))
    name = changes.pop("name")
    job = realjobs.mpi_job(mpi, folder, command, name=name, namespace=namespace)
    job["spec"] = spec_with(job["spec"], transport="agent", **changes)
    del job["spec"]["ssh"]
    return await run_to_end(client, node, KIND.resource, job, container="mpi-launcher")


@pytest.mark.usefixtures("controller")
@pytest.mark.parametrize("mpi", ["openmpi", "openmpi5", "mpich", "intel"])
async def test_an_mpijob_runs_its_ranks_on_both_workers_through_the_agent(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path, mpi: str
) -> None:
    status, log = await run_agent_mpi(client, process_node, namespace, tmp_path, mpi, name="agent")
    assert status["phase"] == "Succeeded", log
    if mpi != "intel":
        assert ranks(log) == on_two_workers("agent"), log
    launcher = await client.get(PODS, "agent-launcher", namespace)
    assert sorted(launched(launcher, "mpi-launcher") or ()) == ["agent-worker-0", "agent-worker-1"]


@pytest.mark.usefixtures("controller")
async def test_a_rank_exiting_3_through_the_agent_fails_the_job_with_its_exit_code(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path
) -> None:
    status, log = await run_agent_mpi(
        client, process_node, namespace, tmp_path, "openmpi", name="rank3", failing_rank=2
    )
    assert status["phase"] == "Failed", log
    failure = condition(status, "ReplicaFailure")
    assert "exited with error code 3" in failure["message"], (failure, log)
