"""Kueue for jobcore's kinds, on the real API server with Kueue's stand-in: a job with Kueue's
queue-name label runs only while its Workload is admitted, on the admitted flavour's nodes,
and its Workload is finished when it ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC
from datetime import datetime
from typing import Any

import pytest

from jobcore import PRIORITY_CLASSES
from jobcore import Client
from jobcore import Object
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import kueue_served
from jobcore.testing import KUEUE_CLUSTER_QUEUES
from jobcore.testing import KUEUE_WORKLOAD_PRIORITY_CLASSES as KUEUE_PRIORITY_CLASSES
from jobcore.testing import KUEUE_WORKLOADS
from jobcore.testing import SimulatedNode
from jobcore.testing import condition
from jobcore.testing import create_admission_check
from jobcore.testing import create_cluster_queue
from jobcore.testing import create_flavor
from jobcore.testing import create_local_queue
from jobcore.testing import events_of
from jobcore.testing import eventually
from jobcore.testing import install_kueue_crds
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import kueue_running
from jobcore.testing import live_pods
from jobcore.testing import wait_for_events
from jobcore.testing import wait_for_phase
from jobcore.testing import wait_for_pods
from tests.support.kindjobs import COLOSSALAIJOB
from tests.support.kindjobs import HOROVODJOB
from tests.support.kindjobs import MPIJOB
from tests.support.mpijobs import MPIJOBS
from torchjob import TorchJobKind

pytestmark = pytest.mark.integration

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KIND = MPIJOB.kind
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
CPU = {"requests": {"cpu": "1"}}


def queued_mpijob(namespace: str, name: str, queue: str = "team") -> Object:
    """An MPIJob of 2 workers in LocalQueue `queue`, each of its 3 pods asking for 1 cpu."""
    template = {
        "spec": {
            "containers": [
                {"name": "mpi-worker", "image": "mpi", "resources": {"requests": {"cpu": "1"}}}
            ]
        }
    }
    job = MPIJOB.job(
        namespace, name, worker={"replicas": 2, "cmd": ["./train"], "template": template}
    )
    job["metadata"]["labels"] = {QUEUE_LABEL: queue}
    return job


@pytest.fixture
async def kueue_controller(client: Client, namespace: str) -> AsyncIterator[None]:
    """Kueue's stand-in and the MPIJob and ColossalAIJob controllers with their Kueue
    integration, and the namespace's LocalQueue "team" in a ClusterQueue of 3 cpu of the
    flavour "spot"."""
    async with (
        kueue_running(client),
        job_controller(client, MPIJOB.kind, namespace=namespace, kueue=True),
        job_controller(client, COLOSSALAIJOB.kind, namespace=namespace, kueue=True),
    ):
        assert await kueue_served(client), "what `jobcore run --kueue auto` looks for"
        spot = f"spot-{namespace}"
        await create_flavor(client, spot, pool=spot)
        await create_cluster_queue(client, f"cq-{namespace}", {spot: "3"})
        await create_local_queue(client, namespace, "team", f"cq-{namespace}")
        yield


async def workload_of(client: Client, namespace: str, job: str) -> Object | None:
    workloads: list[Object] = (await client.list(KUEUE_WORKLOADS, namespace))["items"]
    return next((w for w in workloads if w["metadata"]["ownerReferences"][0]["name"] == job), None)


async def finished_workload(client: Client, namespace: str, job: str) -> Object:
    """The job's Workload once the job layer marked it Finished and lifted Kueue's finalizer."""

    async def finished() -> bool:
        workload = await workload_of(client, namespace, job)
        return (
            workload is not None
            and is_true(workload, "Finished")
            and not (workload["metadata"].get("finalizers"))
        )

    try:
        await eventually(finished, timeout=20)
    except TimeoutError as timeout:
        timeout.add_note(repr(await workload_of(client, namespace, job)))
        raise
    workload = await workload_of(client, namespace, job)
    assert workload is not None
    return workload


async def pods_of(client: Client, namespace: str, job: str) -> dict[str, Object]:
    return {n: p for n, p in (await live_pods(client, namespace)).items() if n.startswith(job)}


async def check_ready(client: Client, namespace: str, job: str, check: str, update: Object) -> None:
    """Play the controller of the admission check `check`: once the job's Workload holds
    quota, its check turns Ready with `update` for one of its pod sets."""

    async def reserved() -> Object | None:
        workload = await workload_of(client, namespace, job)
        return workload if workload is not None and is_true(workload, "QuotaReserved") else None

    await eventually(reserved, timeout=20)
    workload = await reserved()
    assert workload is not None
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready: Object = {"name": check, "state": "Ready", "message": "Provisioned"}
    ready |= {"lastTransitionTime": at, "podSetUpdates": [update]}
    body: Object = {"status": {"admissionChecks": [ready]}}
    name = workload["metadata"]["name"]
    await client.patch(KUEUE_WORKLOADS, name, body, namespace, subresource="status")


def _paused(status: Object | None) -> Object:
    found = [c for c in (status or {}).get("conditions") or () if c["type"] == "Paused"]
    return found[0] if found else {}


def paused_reason(status: Object | None) -> str:
    """The job's Paused condition's reason ("" while it has none)."""
    return str(_paused(status).get("reason", ""))


def paused_message(status: Object | None) -> str:
    return str(_paused(status).get("message", ""))


def is_true(obj: Object, kind: str) -> bool:
    found = [c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == kind]
    return bool(found) and found[0]["status"] == "True"


@pytest.mark.usefixtures("kueue_controller")
async def test_jobs_behind_one_quota_run_one_after_the_other_on_their_flavours_nodes(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=2.0)
    await client.create(MPIJOBS, queued_mpijob(namespace, "first"))
    first = await wait_for_phase(client, MPIJOBS, namespace, "first", "Running", timeout=30)
    # The second is a ColossalAIJob of 2 workers of 1 cpu: they do not fit beside the first.
    colossal = COLOSSALAIJOB.resource
    template = {"spec": {"containers": [{"name": "worker", "image": "c", "resources": CPU}]}}
    worker = {**COLOSSALAIJOB.spec["worker"], "replicas": 2, "template": template}
    second = COLOSSALAIJOB.job(namespace, "second", worker=worker)
    second["metadata"]["labels"] = {QUEUE_LABEL: "team"}
    await client.create(colossal, second)

    async def second_queued() -> Any:
        status = await job_status(client, colossal, namespace, "second")
        return paused_reason(status) == "Queued"

    await eventually(second_queued, timeout=20)
    assert not await pods_of(client, namespace, "second"), "no pod before its admission"
    status = await job_status(client, colossal, namespace, "second")
    message = condition(status, "Paused")["message"]
    assert message.startswith(f"Kueue has not admitted Workload {namespace}/colossalaijob-second-")
    assert "(LocalQueue team)" in message

    # The admitted job's pods run on the flavour's nodes, in Kueue's pod sets.
    pods = await pods_of(client, namespace, "first")
    assert set(pods) == {"first-launcher", "first-worker-0", "first-worker-1"}
    for pod in pods.values():
        assert pod["spec"]["nodeSelector"] == {"pool": f"spot-{namespace}"}
        labels = pod["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/podset"] == labels[REPLICA_TYPE_LABEL]
    assert first["phase"] == "Running"

    # The first ends: its Workload is Finished and lets go; the second is admitted and runs.
    await wait_for_phase(client, MPIJOBS, namespace, "first", "Succeeded", timeout=30)

    workload = await finished_workload(client, namespace, "first")
    assert condition(workload["status"], "Finished")["reason"] == "Succeeded"
    assert [s["name"] for s in workload["spec"]["podSets"]] == ["launcher", "worker"]
    assert [s["count"] for s in workload["spec"]["podSets"]] == [1, 2]
    done = await wait_for_phase(client, colossal, namespace, "second", "Succeeded", timeout=40)
    assert condition(done, "Paused")["reason"] == "Admitted"
    await wait_for_events(client, namespace, "second", "CreatedWorkload", "FinishedWorkload")
    workload = await finished_workload(client, namespace, "second")
    sets = [(s["name"], s["count"]) for s in workload["spec"]["podSets"]]
    assert sets == [("launcher", 1), ("worker", 2)]
    assert workload["status"]["admission"]["podSetAssignments"][1]["flavors"] == {
        "cpu": f"spot-{namespace}"
    }


async def priority_class(client: Client, name: str, value: int) -> None:
    body = {"apiVersion": KUEUE_PRIORITY_CLASSES.api_version, "kind": "WorkloadPriorityClass"}
    await client.create(
        KUEUE_PRIORITY_CLASSES, {**body, "metadata": {"name": name}, "value": value}
    )


async def test_a_preempted_job_stops_keeps_its_history_and_runs_again_once_readmitted(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    low, high = f"low-{namespace}", f"high-{namespace}"
    async with (
        kueue_running(client),
        job_controller(client, MPIJOB.kind, namespace=namespace, kueue=True),
    ):
        spot = f"spot-{namespace}"
        await create_flavor(client, spot)
        await create_cluster_queue(
            client, f"cq-{namespace}", {spot: "3"}, preemption="LowerPriority"
        )
        await create_local_queue(client, namespace, "team", f"cq-{namespace}")
        await priority_class(client, low, 10)
        first = queued_mpijob(namespace, "first")
        first["metadata"]["labels"][PRIORITY_LABEL] = low
        await client.create(MPIJOBS, first)
        await wait_for_phase(client, MPIJOBS, namespace, "first", "Running", timeout=30)
        before = {
            n: p["metadata"]["uid"] for n, p in (await pods_of(client, namespace, "first")).items()
        }

        simulated_node.when(f"{JOB_NAME_LABEL}=urgent,{REPLICA_TYPE_LABEL}=launcher", after=1.0)
        # The urgent job's priority is its pods' PriorityClass, as Kueue reads it: no
        # Workload until the class exists.
        urgent = queued_mpijob(namespace, "urgent")
        urgent["spec"]["worker"]["template"]["spec"]["priorityClassName"] = high
        await client.create(MPIJOBS, urgent)
        await wait_for_events(client, namespace, "urgent", "PriorityClassNotFound")
        assert await workload_of(client, namespace, "urgent") is None
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 1000}
        await client.create(PRIORITY_CLASSES, {**body, "metadata": {"name": high}})
        # The lower-priority job is evicted: its pods go, then its quota; the urgent one runs.
        await wait_for_phase(client, MPIJOBS, namespace, "urgent", "Succeeded", timeout=40)
        workload = await workload_of(client, namespace, "urgent")
        assert workload is not None
        ref = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": high}
        assert (workload["spec"]["priorityClassRef"], workload["spec"]["priority"]) == (ref, 1000)
        stopped = [m for r, m in await events_of(client, namespace, "first") if r == "Stopped"]
        assert stopped, "the evicted job says why it stopped"
        assert stopped[0].startswith("Preempted to accommodate a workload"), stopped

        # Readmitted, it runs again on new pods, with the status it had.
        simulated_node.when(f"{JOB_NAME_LABEL}=first,{REPLICA_TYPE_LABEL}=launcher", after=1.0)
        done = await wait_for_phase(client, MPIJOBS, namespace, "first", "Succeeded", timeout=40)
        workload = await finished_workload(client, namespace, "first")
    assert condition(done, "Paused")["reason"] == "Admitted"
    assert condition(done, "Completed")["status"] == "True"
    requeued = condition(workload["status"], "Requeued")
    assert (requeued["status"], requeued["reason"]) == ("True", "Preempted")
    tasks = {s["name"]: s["uid"] for t in done["tasks"] for s in t["status"]}
    assert not set(tasks.values()) & set(before.values()), "it ran again on new pods"


async def test_a_plugin_kind_is_queued_with_no_code_of_its_own_for_kueue(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    """examples/torchjob declares nothing for Kueue: its master and workers are its pod sets,
    held while the quota is too small, then, once it grows, while its ClusterQueue's admission
    check is not Ready; its workers run with the pod set update the check gave them."""
    kind = TorchJobKind()
    template = {
        "spec": {
            "containers": [
                {"name": "pytorch", "image": "t", "resources": {"requests": {"cpu": "1"}}}
            ]
        }
    }
    job = {
        "apiVersion": kind.resource.api_version,
        "kind": kind.resource.kind,
        "metadata": {"name": "mnist", "namespace": namespace, "labels": {QUEUE_LABEL: "team"}},
        "spec": {"master": {"template": template}, "worker": {"replicas": 2, "template": template}},
    }
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=master", exit_code=0, after=2.0)
    async with kueue_running(client), job_controller(client, kind, namespace=namespace, kueue=True):
        spot, cq, check = f"spot-{namespace}", f"cq-{namespace}", f"prov-{namespace}"
        await create_flavor(client, spot, pool=spot)
        await create_admission_check(client, check, "example.com/provisioner")
        # 3 pods of 1 cpu do not fit
        await create_cluster_queue(client, cq, {spot: "2"}, admission_checks=[check])
        await create_local_queue(client, namespace, "team", cq)
        await client.create(kind.resource, job)

        async def waiting_for_quota() -> bool:
            status = await job_status(client, kind.resource, namespace, "mnist")
            return "insufficient quota" in paused_message(status)

        await eventually(waiting_for_quota, timeout=20)
        assert not await pods_of(client, namespace, "mnist")
        grown = [{"name": spot, "resources": [{"name": "cpu", "nominalQuota": "3"}]}]
        patch = {"spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": grown}]}}
        await client.patch(KUEUE_CLUSTER_QUEUES, cq, patch)

        async def waiting_for_check() -> bool:
            status = await job_status(client, kind.resource, namespace, "mnist")
            return f"{check} Pending" in paused_message(status)

        await eventually(waiting_for_check, timeout=20)
        workload = await workload_of(client, namespace, "mnist")
        assert workload is not None and is_true(workload, "QuotaReserved")
        assert not is_true(workload, "Admitted")
        assert [(c["name"], c["state"]) for c in workload["status"]["admissionChecks"]] == [
            (check, "Pending")
        ]
        assert not await pods_of(client, namespace, "mnist"), "quota alone does not start it"

        # The test plays the check's controller: Ready, with an update for the workers' pods.
        update: Object = {
            "name": "worker",
            "labels": {"provisioned": "yes"},
            "annotations": {"example.com/slot": "7"},
            "nodeSelector": {"zone": "z1"},
            "tolerations": [{"key": "reserved", "operator": "Exists", "effect": "NoSchedule"}],
        }
        await check_ready(client, namespace, "mnist", check, update)
        await wait_for_pods(
            client, namespace, ["mnist-master-0", "mnist-worker-0", "mnist-worker-1"]
        )
        pods = await pods_of(client, namespace, "mnist")
        for pod_name in ("mnist-worker-0", "mnist-worker-1"):
            pod = pods[pod_name]
            assert pod["spec"]["nodeSelector"] == {"pool": spot, "zone": "z1"}
            assert update["tolerations"][0] in pod["spec"]["tolerations"]
            assert pod["metadata"]["labels"]["provisioned"] == "yes"
            assert pod["metadata"]["annotations"]["example.com/slot"] == "7"
        assert "zone" not in pods["mnist-master-0"]["spec"]["nodeSelector"], "the workers' only"
        status = await wait_for_phase(client, kind.resource, namespace, "mnist", "Succeeded")
        workload = await finished_workload(client, namespace, "mnist")
    sets = [(s["name"], s["count"]) for s in workload["spec"]["podSets"]]
    assert sets == [("master", 1), ("worker", 2)]
    assert [t["type"] for t in status["tasks"]] == ["master", "worker"]


async def test_an_elastic_horovodjob_admitted_partially_runs_on_fewer_workers_until_evicted(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    """Its workers' pod set may shrink to minReplicas: a quota of 3 cpu admits the launcher
    and 2 of its 3 workers, and it runs on those; deactivated, it stops and waits."""
    kind = HOROVODJOB.kind
    template = {"spec": {"containers": [{"name": "worker", "image": "h", "resources": CPU}]}}
    worker = {"replicas": 3, "slotsPerWorker": 1, "cmd": ["python", "t.py"], "template": template}
    job = HOROVODJOB.job(
        namespace, "hv", worker=worker, elastic={"minReplicas": 1, "maxReplicas": 3}
    )
    job["metadata"]["labels"] = {QUEUE_LABEL: "team"}
    async with kueue_running(client), job_controller(client, kind, namespace=namespace, kueue=True):
        spot, cq = f"spot-{namespace}", f"cq-{namespace}"
        await create_flavor(client, spot)
        await create_cluster_queue(client, cq, {spot: "3"})
        await create_local_queue(client, namespace, "team", cq)
        await client.create(kind.resource, job)
        await wait_for_phase(client, kind.resource, namespace, "hv", "Running", timeout=30)
        workload = await workload_of(client, namespace, "hv")
        assert workload is not None
        sets = [(s["name"], s["count"], s.get("minCount")) for s in workload["spec"]["podSets"]]
        assert sets == [("launcher", 1, None), ("worker", 3, 1)]
        counts = [a["count"] for a in workload["status"]["admission"]["podSetAssignments"]]
        assert counts == [1, 2]
        assert set(await pods_of(client, namespace, "hv")) == {
            "hv-launcher",
            "hv-worker-0",
            "hv-worker-1",
        }

        # Deactivated (as Kueue does past a requeue limit, or an admin does): it stops.
        name = workload["metadata"]["name"]
        await client.patch(KUEUE_WORKLOADS, name, {"spec": {"active": False}}, namespace)

        async def stopped() -> bool:
            status = await job_status(client, kind.resource, namespace, "hv")
            queued = paused_reason(status) == "Queued"
            return queued and not await pods_of(client, namespace, "hv")

        await eventually(stopped, timeout=30)
        status = await job_status(client, kind.resource, namespace, "hv")
        assert condition(status, "Paused")["message"].startswith("Kueue evicted the job: ")
        workload = await workload_of(client, namespace, "hv")
        assert workload is not None and "admission" not in workload["status"]


async def test_a_job_that_cannot_start_gives_its_quota_back_and_a_deleted_one_its_workload(
    client: Client, namespace: str, simulated_node: SimulatedNode, control_plane: Any
) -> None:
    """A job whose admission check's pod set update contradicts its pods fails (InvalidSpec)
    and its Workload is Finished (FailedToStart) without Kueue's finalizer, so the next job
    gets the quota; fixed, it queues again on a new Workload; deleted while queued, it
    leaves no Workload."""
    await install_kueue_crds(client)
    await control_plane.start_controller_manager()  # the garbage collector, after the CRDs
    async with (
        kueue_running(client),
        job_controller(client, MPIJOB.kind, namespace=namespace, kueue=True),
    ):
        spot, cq, check = f"spot-{namespace}", f"cq-{namespace}", f"prov-{namespace}"
        await create_flavor(client, spot, pool=spot)
        await create_admission_check(client, check, "example.com/provisioner")
        await create_cluster_queue(client, cq, {spot: "3"}, admission_checks=[check])
        await create_local_queue(client, namespace, "team", cq)
        bad = queued_mpijob(namespace, "bad")
        bad["spec"]["worker"]["template"]["metadata"] = {"labels": {"zone": "a"}}
        await client.create(MPIJOBS, bad)
        await check_ready(
            client, namespace, "bad", check, {"name": "worker", "labels": {"zone": "b"}}
        )
        failed = await wait_for_phase(client, MPIJOBS, namespace, "bad", "Failed", timeout=30)
        assert condition(failed, "Failed")["reason"] == "InvalidSpec"
        workload = await finished_workload(client, namespace, "bad")
        finished = condition(workload["status"], "Finished")
        assert finished["reason"] == "FailedToStart"
        assert (
            "the admission's labels zone=b contradicts the pods' labels zone=a"
            in (finished["message"])
        )
        assert finished["message"] in condition(failed, "Failed")["message"]
        # The next job names no priority class: it gets the cluster's global default.
        default = f"default-{namespace}"
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 5}
        await client.create(
            PRIORITY_CLASSES, {**body, "metadata": {"name": default}, "globalDefault": True}
        )
        try:
            await client.create(MPIJOBS, queued_mpijob(namespace, "next"))
            await check_ready(client, namespace, "next", check, {"name": "worker"})
        finally:  # every pod the API server admits would get it
            await client.delete(PRIORITY_CLASSES, default)
        following = await workload_of(client, namespace, "next")
        assert following is not None
        ref = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": default}
        assert (following["spec"]["priorityClassRef"], following["spec"]["priority"]) == (ref, 5)
        await wait_for_phase(client, MPIJOBS, namespace, "next", "Running", timeout=30)

        fixed = {"spec": {"worker": {"template": {"metadata": None}}}}
        await client.patch(MPIJOBS, "bad", fixed, namespace)

        async def queued_again() -> bool:
            status = await job_status(client, MPIJOBS, namespace, "bad")
            workload = await workload_of(client, namespace, "bad")
            fresh = workload is not None and not is_true(workload, "Finished")
            return fresh and paused_reason(status) == "Queued"

        await eventually(queued_again, timeout=20)
        await client.delete(MPIJOBS, "bad", namespace)

        async def no_workload() -> bool:
            return await workload_of(client, namespace, "bad") is None

        # A garbage collector started before Kueue's CRDs learns of Workloads within 30 s.
        await eventually(no_workload, timeout=40)
