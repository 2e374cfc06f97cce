"""`jobcore sandbox --real`: each kind's sample, and each MPI's, runs for real as users run it."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from controllers import frameworks
from controllers import realjobs
from jobcore.testing import process_node_available
from jobcore.testing import require
from tests.commands import start_jobcore

pytestmark = pytest.mark.integration


@pytest.mark.timeout(200)
@pytest.mark.parametrize(
    ("kind", "mpi"),
    [("mpijob", "openmpi"), ("mpijob", "intel"), ("colossalaijob", ""), ("horovodjob", "")],
)
async def test_the_sandbox_runs_each_kinds_sample_for_real(kind: str, mpi: str) -> None:
    require(
        process_node_available() or frameworks.missing(realjobs.framework(kind, mpi or "openmpi"))
    )
    args = ["sandbox", "--real", "--kind", kind, *(["--mpi", mpi] if mpi else [])]
    process = await start_jobcore(*args)
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
    if mpi == "intel":
        assert "# Benchmarking PingPong" in text, text
    else:
        assert len(re.findall(r"rank \d of 4 on \S+-worker-\d: sum=10", text)) == 4, text
    assert text.rstrip().splitlines()[-1] == "sample job finished: Succeeded", text
