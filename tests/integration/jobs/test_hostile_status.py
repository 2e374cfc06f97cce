"""Values read back from a job's status are bounded: whoever may write `*/status` (an admin, a
user granted it) cannot make a job's reconciles fail, nor stall or fail the job, with a delay of
10^15 s, a time in year 9999 or year 1, or a count out of range.

The real controller against the real API server; the simulated node plays the pods. Each job
gets one hostile status while it runs, then must succeed with no reconcile error.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from jobcore import PODS
from jobcore import REGISTRY
from jobcore import Client
from jobcore import Request
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import SimulatedNode
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import resync
from jobcore.testing import wait_for_phase
from jobkinds.mpijob import MPIJobKind
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
YEAR_9999 = "9999-12-31T23:59:59Z"
YEAR_1 = "0001-01-01T00:00:00Z"
INT64_MAX = 2**63 - 1


def reconcile_errors() -> float:
    sample = REGISTRY.get_sample_value(
        "controller_runtime_reconcile_errors_total", {"controller": MPIJOBS.plural}
    )
    return sample or 0.0


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def hostile(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """For each case, a job's name and the status patch it gets while it runs."""
    times = [{**c, "lastTransitionTime": YEAR_9999} for c in status["conditions"]]
    resumed = {"type": "Paused", "status": "False", "reason": "Resumed"}
    return {
        "delay": {"lastRetryTime": now(), "retryDelaySeconds": 10**15},
        "retried-in-9999": {"lastRetryTime": YEAR_9999, "retryDelaySeconds": 360},
        "retried-in-1": {"lastRetryTime": YEAR_1, "retryDelaySeconds": INT64_MAX},
        "not-a-time": {"lastRetryTime": "NaN", "retryDelaySeconds": -5},
        "restarts": {"restarts": INT64_MAX},
        "negative-counts": {
            "restarts": -3,
            "aggregate": {"running": -1, "failed": INT64_MAX},
            "tasks": [{"type": "worker", "restartCount": INT64_MAX}],
        },
        "conditions-in-9999": {"conditions": times},
        # Counted from year 1, the job would be far past its activeDeadlineSeconds.
        "resumed-in-1": {"conditions": [*times, {**resumed, "lastTransitionTime": YEAR_1}]},
    }


@pytest.mark.timeout(120)
async def test_hostile_status_values_neither_fail_reconciles_nor_the_job(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=6.0)
    names = list(hostile({"conditions": []}))
    async with job_controller(client, KIND, namespace=namespace) as controller:
        errors = reconcile_errors()

        async def run(name: str) -> None:
            await client.create(
                MPIJOBS, mpijob(namespace, name, runPolicy={"activeDeadlineSeconds": 600})
            )
            status = await wait_for_phase(client, MPIJOBS, namespace, name, "Running")

            async def launched() -> bool:
                pods = await client.list(
                    PODS, namespace, label_selector=f"{REPLICA_TYPE_LABEL}=launcher"
                )
                return any(p["metadata"]["name"] == f"{name}-launcher" for p in pods["items"])

            await eventually(launched, timeout=30)
            patch = {"status": hostile(status)[name]}
            await client.patch(MPIJOBS, name, patch, namespace, subresource="status")
            await resync(controller, Request(namespace, name))
            await wait_for_phase(client, MPIJOBS, namespace, name, "Succeeded", timeout=60)

        await asyncio.gather(*map(run, names))
        failed = reconcile_errors() - errors
    # What the controller wrote back, clamped (a field it does not write, such as restarts
    # at 0, stays as stored, and is clamped on each read).
    statuses = {name: await job_status(client, MPIJOBS, namespace, name) for name in names}
    delays = {
        name: s["retryDelaySeconds"] for name, s in statuses.items() if "retryDelaySeconds" in s
    }
    print(f"{len(names)} jobs Succeeded, {failed:.0f} reconcile errors; delays written: {delays}")
    assert failed == 0, "a reconcile failed"
    for name, status in statuses.items():
        assert 1 <= status.get("retryDelaySeconds", 1) <= 86_400, name
        assert all(c["lastTransitionTime"] <= now() for c in status["conditions"]), name
