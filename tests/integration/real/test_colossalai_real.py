"""Real ColossalAI: `colossalai run` starts torchrun over ssh on every process-backed worker.

The ColossalAIJob controller and a real API server; ColossalAI's launcher and Debian's torch
come from `scripts/frameworks.sh colossalai`; under CI, without them, these tests fail.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from controllers.sandbox import realjobs
from jobcore import Client
from jobcore.testing import ProcessNode
from jobcore.testing import condition
from jobcore.testing import wait_for_events
from jobkinds.colossalaijob import ColossalAIJobKind
from tests.support import mpioutput
from tests.support.fixtures import controller_fixture
from tests.support.realruns import colossalai_pair
from tests.support.realruns import run_to_end

pytestmark = pytest.mark.integration

KIND = ColossalAIJobKind()
JOBS = KIND.resource


controller = controller_fixture(KIND, framework="colossalai")


@pytest.mark.usefixtures("controller")
@pytest.mark.timeout(180)
async def test_two_workers_all_reduce_over_gloo_and_a_failing_script_fails_its_job(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path
) -> None:
    (status, log), (failed, failed_log) = await colossalai_pair(
        client, process_node, tmp_path, name="cai", namespace=namespace, transport="ssh"
    )
    assert status["phase"] == "Succeeded", log
    assert mpioutput.ranks(log, prefix=".*") == mpioutput.on_two_workers("cai"), log
    await wait_for_events(client, namespace, "cai", "Succeeded")

    assert failed["phase"] == "Failed", failed_log
    assert condition(failed, "Failed")["status"] == "True", failed
    failure = condition(failed, "ReplicaFailure")
    # colossalai run reports the worker whose torchrun failed and exits 1, whatever the code.
    assert "caifail-launcher" in failure["message"], failure
    assert "exited with error code 1" in failure["message"], (failure, failed_log)
    # The script's own code (3) and the failing worker are only in the launcher's log.
    assert re.search(r"exitcode\s*: 3", failed_log), failed_log
    assert re.search(r"caifail-worker-1\S*: failure", failed_log), failed_log


ARGS_SCRIPT = """\
import json
import os
import sys

print("args", json.dumps(sys.argv[1:]), "HOSTNAME", os.environ.get("HOSTNAME"), flush=True)
"""
"""Prints its arguments, as it received them, and the HOSTNAME it was given."""


@pytest.mark.usefixtures("controller")
@pytest.mark.timeout(120)
async def test_script_arguments_reach_the_script_as_written_through_the_workers_shell(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path
) -> None:
    # colossalai run joins the script's arguments into the shell command it runs over ssh.
    job = realjobs.colossalai_job(tmp_path, name="caiargs", namespace=namespace, workers=1, procs=1)
    (tmp_path / "args.py").write_text(ARGS_SCRIPT)
    marker = tmp_path / "ran"
    written = ["two words", f"$(touch {marker})", "it's;"]
    job["spec"]["worker"]["command"] = ["args.py", *written]
    status, log = await run_to_end(
        client, process_node, JOBS, job, container="launcher", timeout=90
    )
    assert status["phase"] == "Succeeded", log
    assert f"args {json.dumps(written)} HOSTNAME None" in log, log
    assert not marker.exists(), log
