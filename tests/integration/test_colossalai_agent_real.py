"""Real ColossalAI without ssh: the launcher starts torchrun on every process-backed worker
through jobcore's agent, in `colossalai run`'s place; no sshd runs anywhere.

ColossalAI's launcher and Debian's torch come from `scripts/frameworks.sh colossalai`, the
agent from `scripts/agent.sh`; under CI, without them, these tests fail.
"""

from __future__ import annotations

import re
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
from jobkinds.colossalaijob import ColossalAIJobKind
from tests import mpioutput
from tests.realruns import run_to_end

pytestmark = pytest.mark.integration

KIND = ColossalAIJobKind()


@pytest.fixture
async def controller(
    client: Client, namespace: str, agent_binary: str
) -> AsyncIterator[Controller]:
    require(frameworks.missing("colossalai"))
    # The process node ignores images: the init container runs the host's agent.
    agent = AgentSource(image="jobcore:test", path=agent_binary)
    async with job_controller(client, KIND, namespace=namespace, agent=agent) as controller:
        yield controller


async def run_agent_job(
    client: Client, node: ProcessNode, folder: Path, **options: Any
) -> tuple[dict[str, Any], str]:
    job = realjobs.colossalai_job(folder, **options)
    job["spec"]["transport"] = "agent"
    del job["spec"]["ssh"]
    return await run_to_end(client, node, KIND.resource, job, container="launcher", timeout=150)


@pytest.mark.usefixtures("controller")
@pytest.mark.timeout(180)
async def test_torchrun_runs_on_both_workers_through_the_agent(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path
) -> None:
    status, log = await run_agent_job(
        client, process_node, tmp_path, name="caiagent", namespace=namespace
    )
    assert status["phase"] == "Succeeded", log
    # Every worker's output is in the launcher's log: torchrun tees each rank's stdout.
    assert mpioutput.ranks(log, prefix=".*") == mpioutput.on_two_workers("caiagent"), log
    launcher = await client.get(PODS, "caiagent-launcher", namespace)
    assert sorted(launched(launcher, "launcher") or ()) == [
        "caiagent-worker-0",
        "caiagent-worker-1",
    ]


@pytest.mark.usefixtures("controller")
@pytest.mark.timeout(180)
async def test_a_rank_exiting_3_fails_the_job_as_colossalai_run_would(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path
) -> None:
    status, log = await run_agent_job(
        client,
        process_node,
        tmp_path,
        name="caiagentfail",
        namespace=namespace,
        procs=1,
        failing_rank=1,
    )
    assert status["phase"] == "Failed", log
    failure = condition(status, "ReplicaFailure")
    # torchrun on worker 1 reports its rank's code (3) and exits 1, as over ssh; the launcher
    # exits with it once worker 0 has ended too.
    assert "caiagentfail-launcher" in failure["message"], failure
    assert "exited with error code 1" in failure["message"], (failure, log)
    assert re.search(r"exitcode\s*: 3", log), log
    assert re.search(r"torchrun on caiagentfail-worker-1\S* exited with code 1", log), log
