"""Real ColossalAI without ssh: the launcher starts torchrun on every process-backed worker
through jobcore's agent, in `colossalai run`'s place; no sshd runs anywhere.

ColossalAI's launcher and Debian's torch come from `scripts/frameworks.sh colossalai`, the
agent from `scripts/agent.sh`; under CI, without them, these tests fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controllers.sandbox import frameworks
from jobcore import PODS
from jobcore import Client
from jobcore.launcher import launched
from jobcore.testing import ProcessNode
from jobcore.testing import condition
from jobcore.testing import require
from jobkinds.colossalaijob import ColossalAIJobKind
from tests.support import mpioutput
from tests.support.realruns import colossalai_pair

pytestmark = pytest.mark.integration

KIND = ColossalAIJobKind()


@pytest.mark.usefixtures("agent_controller")
@pytest.mark.timeout(180)
async def test_torchrun_runs_on_both_workers_through_the_agent_and_a_rank_exiting_3_fails_it(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path
) -> None:
    require(frameworks.missing("colossalai"))
    (status, log), (failed, failed_log) = await colossalai_pair(
        client, process_node, tmp_path, name="caiagent", namespace=namespace, transport="agent"
    )
    assert status["phase"] == "Succeeded", log
    # Every worker's output is in the launcher's log: torchrun tees each rank's stdout.
    assert mpioutput.ranks(log, prefix=".*") == mpioutput.on_two_workers("caiagent"), log
    launcher = await client.get(PODS, "caiagent-launcher", namespace)
    workers = ["caiagent-worker-0", "caiagent-worker-1"]
    assert sorted(launched(launcher, "launcher") or ()) == workers

    assert failed["phase"] == "Failed", failed_log
    failure = condition(failed, "ReplicaFailure")
    # torchrun on worker 1 reports its rank's code (3) and exits 1, as over ssh; the launcher
    # exits with it once worker 0 has ended too.
    assert "caiagentfail-launcher" in failure["message"], failure
    assert "exited with error code 1" in failure["message"], (failure, failed_log)
    assert "torchrun failed on: caiagentfail-worker-1;" in failure["message"], failure
    assert re.search(r"exitcode\s*: 3", failed_log), failed_log
