"""Other writers touching the jobs the controller drives: nothing of either side is lost.

A second writer updating the jobs' metadata with resourceVersion conflicts, and one
overwriting their status, while the real controller runs them on the simulated node.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jobcore import PODS
from jobcore import Client
from jobcore import ConflictError
from jobcore import Controller
from jobcore import Request
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import SimulatedNode
from jobcore.testing import create_until_phase
from jobcore.testing import eventually
from jobcore.testing import job_status
from jobcore.testing import wait_for_phase
from jobcore.testing import wait_until_settled
from jobkinds.mpijob import MPIJobKind
from tests.support.fixtures import controller_fixture
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
MPIJOBS = KIND.resource
CONDITIONS = ["Initialized", "Running", "ReplicaFailure", "Completed", "Failed"]


controller = controller_fixture(KIND)


def complete(status: dict[str, Any], phase: str) -> bool:
    types = [c["type"] for c in status.get("conditions") or ()]
    tasks = {t["type"]: len(t["status"]) for t in status.get("tasks") or ()}
    return (
        status.get("phase") == phase
        and types == CONDITIONS
        and tasks == {"launcher": 1, "worker": 2}
        and status.get("ready") is not None
    )


async def test_metadata_writers_with_conflicts_and_the_controller_both_land(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=1.0)
    names = [f"busy-{i}" for i in range(5)]
    for name in names:
        await client.create(MPIJOBS, mpijob(namespace, name))
    conflicts = 0

    async def label(name: str, n: int) -> None:
        """Read-modify-write with the resourceVersion, as a careful second controller does."""
        nonlocal conflicts
        while True:
            job = await client.get(MPIJOBS, name, namespace)
            job["metadata"].setdefault("labels", {})[f"writer-{n}"] = "yes"
            try:
                await client.update(MPIJOBS, job)
                return
            except ConflictError:
                conflicts += 1

    await asyncio.gather(*(label(name, n) for name in names for n in range(10)))
    for name in names:
        status = await wait_for_phase(client, MPIJOBS, namespace, name, "Succeeded")
        assert complete(status, "Succeeded"), status
        labels = (await client.get(MPIJOBS, name, namespace))["metadata"]["labels"]
        assert {f"writer-{n}" for n in range(10)} <= labels.keys()
    assert conflicts > 0, "the writers raced each other, as intended"


async def test_a_status_overwritten_by_another_writer_is_restored(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await create_until_phase(client, MPIJOBS, mpijob(namespace, "clobbered"), "Running")
    await eventually(
        lambda: _status_is(
            client, namespace, "clobbered", lambda s: complete(s, "Running") and s["ready"] == "3/3"
        )
    )
    # Else the controller's own late write, not its noticing, could undo the one below.
    await wait_until_settled(client, controller, MPIJOBS, Request(namespace, "clobbered"))
    wrong = {"status": {"phase": "Pending", "conditions": [], "tasks": []}}
    await client.patch(MPIJOBS, "clobbered", wrong, namespace, subresource="status")
    touches = 0

    async def restored() -> bool:
        # Nothing about the job changes; pod events bring the controller back to it.
        nonlocal touches
        touches += 1
        touch = {"metadata": {"labels": {"touched": str(touches)}}}
        await client.patch(PODS, "clobbered-worker-0", touch, namespace)
        return await _status_is(client, namespace, "clobbered", lambda s: complete(s, "Running"))

    await eventually(restored, interval=0.5)


async def _status_is(client: Client, namespace: str, name: str, check: Any) -> bool:
    return bool(check(await job_status(client, MPIJOBS, namespace, name)))
