"""`jobcore sandbox --real --launch agent`: the MPIJob sample launched through jobcore's agent,
as `scripts/sandbox.sh --real --launch agent` runs it (the host's agent from scripts/agent.sh)."""

from __future__ import annotations

import asyncio
import re

import pytest

from controllers.sandbox import frameworks
from jobcore.jobs import AgentSource
from jobcore.testing import process_node_available
from jobcore.testing import require
from tests.support.commands import start_jobcore

pytestmark = pytest.mark.integration


@pytest.mark.timeout(200)
async def test_the_sandbox_runs_the_mpijob_sample_through_the_agent(
    agent_source: AgentSource,
) -> None:
    require(process_node_available() or frameworks.missing("openmpi4"))
    args = ["sandbox", "--real", "--launch", "agent", "--agent-path", agent_source.path]
    process = await start_jobcore(*args)
    output, _ = await asyncio.wait_for(process.communicate(), 180)
    text = output.decode()
    assert process.returncode == 0, text
    launcher = text.partition("launcher output:\n")[2]
    assert launcher.startswith("jobcore-agent launch: waiting up to 300s for 2 worker(s)'"), text
    assert len(re.findall(r"rank \d of 4 on mpi-example-worker-\d: sum=10", launcher)) == 4, text
    assert text.rstrip().splitlines()[-1] == "sample job finished: Succeeded", text
