"""The `jobcore` command as users run it: a real process against a real API server."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from jobcore import PODS
from jobcore import Client
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import crd_for
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import create_until_phase
from jobcore.testing import install_crd
from jobkinds.mpijob import MPIJobKind
from tests.commands import run_args
from tests.commands import start_jobcore
from tests.mpijobs import MPIJOBS
from tests.mpijobs import mpijob
from tests.mpijobs import pods_of

pytestmark = pytest.mark.integration


async def test_run_reconciles_and_stops_gracefully_on_sigterm(
    client: Client, namespace: str, kubeconfig_path: str
) -> None:
    await install_crd(client, crd_for(MPIJobKind()))
    node = SimulatedNode(client, name=f"node-{namespace}", namespace=namespace)
    node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.2)
    process = await start_jobcore(
        "--log-format", "json", "--log-level", "debug", *run_args(kubeconfig_path, namespace)
    )
    try:
        async with background(node.run()):
            await create_until_phase(client, MPIJOBS, mpijob(namespace, "cli"), "Succeeded")
            pods = (await client.list(PODS, namespace))["items"]
            assert {p["metadata"]["name"] for p in pods} == pods_of(["cli"])
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        output, _ = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 0, output.decode()
        assert time.monotonic() - started < 30
        assert b'"event": "shutting down"' in output or b'"event":"shutting down"' in output
        reconciled = [line for line in output.splitlines() if b'"reconciled"' in line]
        assert (
            reconciled and b'"reconcile_id"' in reconciled[0] and b'"controller"' in reconciled[0]
        )
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_sandbox_runs_the_sample_job_to_succeeded_showing_its_status() -> None:
    """The README's main command: `scripts/sandbox.sh` runs `jobcore sandbox`."""
    process = await start_jobcore("sandbox")
    output, _ = await asyncio.wait_for(process.communicate(), 120)
    text = output.decode()
    assert process.returncode == 0, text
    assert "phase=Running" in text  # shown live, while it runs
    assert "sample job finished: Succeeded" in text
