"""`jobcore sandbox --real`, the README's command: its sample runs for real as users run it.

One run, the default sample (an MPIJob on Open MPI 4), proves the command: what it starts, what it
prints and where its log goes do not depend on the kind. Each other sample (`--kind`, `--mpi`)
is the job a kind's real test runs through the same `realjobs` functions: Intel MPI's
PingPong in test_mpi_real.py, ColossalAI's all-reduce in test_colossalai_real.py, Horovod's over
gloo in test_horovod_real.py; and test_hostkey_real.py takes every kind's job and launcher
container from `realjobs.sample`, as the sandbox does."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from controllers.sandbox import frameworks
from controllers.sandbox import realjobs
from jobcore.testing import process_node_available
from jobcore.testing import require
from tests.support.commands import start_jobcore

pytestmark = pytest.mark.integration


@pytest.mark.timeout(200)
async def test_the_sandbox_runs_its_sample_for_real() -> None:
    require(process_node_available() or frameworks.missing(realjobs.framework("mpijob", "openmpi")))
    process = await start_jobcore("sandbox", "--real")
    output, _ = await asyncio.wait_for(process.communicate(), 180)
    text = output.decode()
    assert process.returncode == 0, text
    log = re.search(r"^controller log: (\S+) \(--verbose shows it here\)$", text, re.M)
    assert log is not None, text
    text_of_log = await asyncio.to_thread(Path(log.group(1)).read_text)
    lines = text_of_log.splitlines()  # the controller's JSON lines went there, not here
    assert any(json.loads(line).get("event") == "starting controllers" for line in lines)
    assert not any(line.startswith("{") for line in text.splitlines()), text
    assert re.search(r"^\[ *[\d.]+s\] \S+-example: phase=Running ", text, re.M), text
    assert "launcher output:\n" in text and "all 2 worker(s) reachable" in text, text
    assert len(re.findall(r"rank \d of 4 on mpi-example-worker-\d: sum=10", text)) == 4, text
    assert text.rstrip().splitlines()[-1] == "sample job finished: Succeeded", text
