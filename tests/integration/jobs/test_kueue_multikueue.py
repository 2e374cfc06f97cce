"""Which jobs jobcore runs and Kueue queues, on the real API server with Kueue's stand-in: a
job that another controller runs (`spec.managedBy`) gets no pods and no status from jobcore;
one that MultiKueue runs in a worker cluster keeps its Workload here, Finished when the status
copied back says the job ended; an unlabelled job is queued in a namespace the controller's
configuration selects, and runs at once elsewhere."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from jobcore import NAMESPACES
from jobcore import Client
from jobcore import Object
from jobcore._jobs.workload import pod_sets
from jobcore.jobs import KueueScope
from jobcore.jobs import parse_job
from jobcore.testing import KUEUE_WORKLOADS
from jobcore.testing import SimulatedNode
from jobcore.testing import create_cluster_queue
from jobcore.testing import create_flavor
from jobcore.testing import create_local_queue
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import kueue_running
from jobcore.testing import temporary_namespace
from jobcore.testing import wait_for_phase
from tests.integration.jobs.test_kueue_jobs import QUEUE_LABEL
from tests.integration.jobs.test_kueue_jobs import finished_workload
from tests.integration.jobs.test_kueue_jobs import kueue_controller  # noqa: F401 (a fixture)
from tests.integration.jobs.test_kueue_jobs import paused_reason
from tests.integration.jobs.test_kueue_jobs import pods_of
from tests.integration.jobs.test_kueue_jobs import queued_mpijob
from tests.integration.jobs.test_kueue_jobs import workload_of
from tests.support.kindjobs import MPIJOB
from tests.support.mpijobs import MPIJOBS

pytestmark = pytest.mark.integration

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


@pytest.mark.usefixtures("kueue_controller")
async def test_jobs_managed_by_others_get_no_pods_nor_status_while_a_job_beside_them_runs(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    await client.create(MPIJOBS, queued_mpijob(namespace, "local"))
    await wait_for_phase(client, MPIJOBS, namespace, "local", "Running", timeout=30)
    other = queued_mpijob(namespace, "other")
    other["spec"]["managedBy"] = "example.com/other"
    await client.create(MPIJOBS, other)
    remote = queued_mpijob(namespace, "remote")
    remote["spec"]["managedBy"] = MULTIKUEUE
    await client.create(MPIJOBS, remote)

    async def dispatched() -> bool:  # MultiKueue's job has its Workload here, to dispatch
        return await workload_of(client, namespace, "remote") is not None

    await eventually(dispatched, timeout=20)
    # The job beside them ran its pods all along; the others have none, and no status.
    assert await pods_of(client, namespace, "local")
    for name in ("other", "remote"):
        assert not await pods_of(client, namespace, name)
        assert await job_status(client, MPIJOBS, namespace, name) == {}
    assert await workload_of(client, namespace, "other") is None

    # MultiKueue copies the worker's status back: the job ended, so its Workload is Finished.
    ended = {"type": "Completed", "status": "True", "reason": "Succeeded", "message": "Done."}
    ended["lastTransitionTime"] = "2026-01-01T00:00:00Z"
    copied = {"status": {"phase": "Succeeded", "conditions": [ended]}}
    await client.patch(MPIJOBS, "remote", copied, namespace, subresource="status")
    workload = await finished_workload(client, namespace, "remote")
    assert not await pods_of(client, namespace, "remote")
    assert [c["reason"] for c in workload["status"]["conditions"] if c["type"] == "Finished"] == [
        "Succeeded"
    ]


@pytest.fixture
async def other_namespace(client: Client, namespace: str) -> AsyncIterator[str]:
    async with temporary_namespace(client, f"{namespace[:30]}-b") as name:
        yield name


async def test_an_unlabelled_job_is_queued_in_a_selected_namespace_and_runs_at_once_elsewhere(
    client: Client, namespace: str, other_namespace: str
) -> None:
    selected = {"metadata": {"labels": {"jobcore-test/queued": namespace}}}
    await client.patch(NAMESPACES, namespace, selected)
    scope = KueueScope(
        manage_jobs_without_queue_name=True,
        namespace_selector=f"jobcore-test/queued={namespace}",
        default_local_queue=True,
    )
    async with (
        kueue_running(client),
        job_controller(client, MPIJOB.kind, namespace=None, kueue=True, kueue_scope=scope),
    ):
        spot = f"spot-{namespace}"
        await create_flavor(client, spot, pool=spot)
        await create_cluster_queue(client, f"cq-{namespace}", {spot: "1"})  # < the job's 3
        await create_local_queue(client, namespace, "default", f"cq-{namespace}")
        for where in (namespace, other_namespace):
            job = queued_mpijob(where, "train")
            del job["metadata"]["labels"][QUEUE_LABEL]
            await client.create(MPIJOBS, job)

        async def queued() -> bool:
            status = await job_status(client, MPIJOBS, namespace, "train")
            return paused_reason(status) == "Queued"

        await eventually(queued, timeout=20)
        workload = await workload_of(client, namespace, "train")
        assert workload is not None and workload["spec"]["queueName"] == "default"
        assert not await pods_of(client, namespace, "train")

        async def running() -> bool:
            return bool(await pods_of(client, other_namespace, "train"))

        await eventually(running, timeout=20)
        assert await workload_of(client, other_namespace, "train") is None
        status = await job_status(client, MPIJOBS, other_namespace, "train")
        assert paused_reason(status) == ""


def prebuilt_workload(job: Object, name: str, workers: int) -> Object:
    """The Workload MultiKueue makes in a worker before the job's copy, for `workers` workers
    (the job's own count: in sync)."""
    parsed, errors = parse_job(MPIJOB.kind, job)
    assert parsed is not None, errors
    sets = pod_sets(MPIJOB.kind, parsed)
    for pod_set in sets:
        if pod_set["name"] == "worker":
            pod_set["count"] = workers
    meta = {"name": name, "namespace": job["metadata"]["namespace"]}
    spec = {"queueName": "team", "podSets": sets}
    return {
        "apiVersion": KUEUE_WORKLOADS.api_version,
        "kind": "Workload",
        "metadata": meta,
        "spec": spec,
    }


@pytest.mark.usefixtures("kueue_controller")
async def test_a_job_uses_its_prebuilt_workload_and_one_out_of_sync_does_not_run(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    for name, workers in (("copy", 2), ("wrong", 3)):
        job = queued_mpijob(namespace, name)
        job["metadata"]["labels"][PREBUILT_LABEL] = f"{name}-prebuilt"
        await client.create(KUEUE_WORKLOADS, prebuilt_workload(job, f"{name}-prebuilt", workers))
        created = await client.create(MPIJOBS, job)
        if name == "copy":  # admitted by its prebuilt Workload, it runs
            await wait_for_phase(client, MPIJOBS, namespace, name, "Running", timeout=30)
            workload = await client.get(KUEUE_WORKLOADS, f"{name}-prebuilt", namespace)
            [owner] = workload["metadata"]["ownerReferences"]
            assert (owner["uid"], owner["controller"]) == (created["metadata"]["uid"], True)
            assert workload["metadata"]["labels"][JOB_UID_LABEL] == created["metadata"]["uid"]

    async def out_of_sync() -> bool:
        workload = await client.get(KUEUE_WORKLOADS, "wrong-prebuilt", namespace)
        found = [
            c for c in workload.get("status", {}).get("conditions") or () if c["type"] == "Finished"
        ]
        return bool(found) and found[0]["reason"] == "OutOfSync"

    await eventually(out_of_sync, timeout=20)
    assert not await pods_of(client, namespace, "wrong")
    workloads = (await client.list(KUEUE_WORKLOADS, namespace))["items"]
    assert sorted(w["metadata"]["name"] for w in workloads) == ["copy-prebuilt", "wrong-prebuilt"]
