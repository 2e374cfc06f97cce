"""The largest job accepted gets a status the API server stores, and kubectl users can read.

A 1,000-worker MPIJob (the most a kind accepts) whose pods have several containers, run by
the real controller on a real API server with the simulated node: listed pod by pod with
every container, its status would pass what etcd stores in one object (1.5 MiB); compacted
(docs/status.md, "Tasks"), it stays well below, and still names the failed workers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobcore import PODS
from jobcore import ApiError
from jobcore import Client
from jobcore import Object
from jobcore._jobs import tasks as tasks_module
from jobcore.jobs import JobStatus
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import wait_for_end
from jobkinds.mpijob import MPIJobKind
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
WORKERS = 1_000
NAME = "a-status-of-a-thousand-workers-with-sidecars"
SIDECARS = [f"sidecar-shipping-logs-metrics-and-checkpoints-to-storage-{i}" for i in range(19)]
"""With them, pod by pod, the status would be 1.78 MiB: more than etcd stores."""
BOUND = 512 * 1024
"""Well below etcd's 1.5 MiB per object, leaving room for the rest of the job."""


def listed_in_full(status: Any, pods: list[Object]) -> Any:
    """`status` with its tasks listed pod by pod, as before compaction: counted by the
    controller's own code with its limits lifted."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tasks_module, "LISTED_PODS", len(pods))
        patch.setattr(
            tasks_module, "LISTED_CONTAINERS", sum(len(p["spec"]["containers"]) for p in pods)
        )
        tasks, _ = tasks_module.tasks_and_aggregate(pods, KIND.replica_types, JobStatus())
    return {**status, "tasks": [task.to_api() for task in tasks]}


def big_job(namespace: str) -> Any:
    job = mpijob(namespace, NAME, replicas=WORKERS)
    template = job["spec"]["worker"]["template"]["spec"]
    template["containers"] += [{"name": name, "image": "sidecar:latest"} for name in SIDECARS]
    return job


@pytest.mark.timeout(450)  # its own waits: 300 s for the thousand pods, 90 s for the end
async def test_a_thousand_workers_of_twenty_containers_get_a_compact_stored_status(
    client: Client, namespace: str, kubeconfig_path: str
) -> None:
    node = SimulatedNode(client, name=f"big-{namespace}"[:63], namespace=namespace, workers=64)
    failed = [f"{NAME}-worker-{i}" for i in (7, 500, 999)]
    async with background(node.run()), job_controller(client, KIND, namespace=namespace):
        await node.pods.wait_for_sync()
        await client.create(MPIJOBS, big_job(namespace))

        async def all_running() -> bool:
            status = await job_status(client, MPIJOBS, namespace, NAME)
            return bool((status.get("aggregate") or {}).get("running") == WORKERS + 1)

        await eventually(all_running, timeout=300, interval=1)
        for name in failed:
            await node.fail(namespace, name, exit_code=137, reason="OOMKilled")
        await wait_for_end(client, MPIJOBS, namespace, NAME, timeout=60)

        async def all_failed_listed() -> bool:
            status = await job_status(client, MPIJOBS, namespace, NAME)
            return bool(status["tasks"][1]["aggregate"]["failed"] == len(failed))

        await eventually(all_failed_listed, timeout=30, interval=0.5)
        status = await job_status(client, MPIJOBS, namespace, NAME)
        full = listed_in_full(status, (await client.list(PODS, namespace))["items"])
        async with await Client.from_kubeconfig(kubeconfig_path, retry_attempts=1) as once:
            with pytest.raises(ApiError, match="too large"):  # etcd stores 1.5 MiB at most
                await once.patch(MPIJOBS, NAME, {"status": full}, namespace, subresource="status")
    size, unbound = len(json.dumps(status)), len(json.dumps(full)) / 2**20
    print(
        f"status of {WORKERS} workers x {1 + len(SIDECARS)} containers: {size / 1024:.0f} KiB; "
        f"listed pod by pod: {unbound:.2f} MiB, refused"
    )
    assert size < BOUND
    launcher, workers = status["tasks"]
    assert [replica["name"] for replica in launcher["status"]] == [f"{NAME}-launcher"]
    assert workers["aggregate"]["failed"] == len(failed)
    assert sum(workers["aggregate"].values()) == WORKERS
    listed = {replica["name"]: replica for replica in workers["status"]}
    assert set(failed) <= set(listed)
    assert len(listed[failed[0]]["containers"]) == 1 + len(SIDECARS)
    assert "OOMKilled" in condition(status, "ReplicaFailure")["message"]
