"""The Kueue stand-in on the real API server: Workloads created directly, as a job
integration creates them, admitted, preempted, evicted and requeued as Kueue does.

Where Kueue leaves a step to the job integration (clearing an evicted Workload's admission
once its job has stopped, setting PodsReady, marking it Finished), the test takes that step
itself, with the conditions Kueue's jobframework writes.
"""

from __future__ import annotations

from typing import Any

import pytest

from jobcore import Client
from jobcore import Object
from jobcore.testing import KUEUE_RESOURCE_FLAVORS
from jobcore.testing import KUEUE_WORKLOADS
from jobcore.testing import WaitForPodsReady
from jobcore.testing import condition
from jobcore.testing import create_cluster_queue
from jobcore.testing import create_flavor
from jobcore.testing import create_local_queue
from jobcore.testing import eventually
from jobcore.testing import install_kueue_crds
from jobcore.testing import kueue_running
from jobcore.testing import temporary_namespace

pytestmark = pytest.mark.integration

TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "i", "args": ["kept"]}]}}
"""A pod template: the fields the CRD does not type are kept as written."""


async def team_queue(client: Client, namespace: str, cpu: str, *, preemption: str = "Never") -> str:
    """A flavour, a ClusterQueue of `cpu` in it, and the namespace's LocalQueue "team" in
    that ClusterQueue; returns the ClusterQueue's name (cluster-wide names carry the
    test's namespace)."""
    cq, default = f"cq-{namespace}", f"default-{namespace}"
    await create_flavor(client, default)
    await create_cluster_queue(client, cq, {default: cpu}, preemption=preemption)
    await create_local_queue(client, namespace, "team", cq)
    return cq


def workload_body(namespace: str, name: str, spec: Object, **meta: Any) -> Object:
    return {
        "apiVersion": KUEUE_WORKLOADS.api_version,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": spec,
    }


async def workload(
    client: Client,
    namespace: str,
    name: str,
    *,
    cpu: str = "1",
    count: int = 1,
    min_count: int | None = None,
    priority: int | None = None,
) -> Object:
    """A Workload queued in the LocalQueue "team": `count` pods requesting `cpu` each."""
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    pod_set: Object = {
        "name": "workers",
        "count": count,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
    }
    if min_count is not None:
        pod_set["minCount"] = min_count
    spec: Object = {"queueName": "team", "podSets": [pod_set]}
    if priority is not None:
        spec["priority"] = priority
    return await client.create(KUEUE_WORKLOADS, workload_body(namespace, name, spec))


async def status_of(client: Client, namespace: str, name: str) -> Any:
    return (await client.get(KUEUE_WORKLOADS, name, namespace)).get("status") or {}


def has(status: Any, kind: str, value: str = "True", reason: str | None = None) -> bool:
    found = next((c for c in status.get("conditions") or [] if c["type"] == kind), None)
    return (
        found is not None
        and found["status"] == value
        and (reason is None or found["reason"] == reason)
    )


async def wait_for(
    client: Client, namespace: str, name: str, kind: str, value: str = "True", **options: Any
) -> Any:
    """Wait until the Workload's condition `kind` has status `value` (and `reason`)."""
    reason = options.pop("reason", None)

    async def reached() -> bool:
        return has(await status_of(client, namespace, name), kind, value, reason)

    await eventually(reached, **options)
    return await status_of(client, namespace, name)


def _set(status: Any, kind: str, value: bool, reason: str, message: str) -> None:
    stamp = "2000-01-01T00:00:00Z"
    items = [c for c in status.get("conditions") or [] if c["type"] != kind]
    items.append(
        {
            "type": kind,
            "status": "True" if value else "False",
            "reason": reason,
            "message": message,
            "lastTransitionTime": stamp,
        }
    )
    status["conditions"] = items


async def set_condition(client: Client, namespace: str, name: str, kind: str, reason: str) -> None:
    """What an integration writes: PodsReady True, or Finished True once its job ended."""
    obj = await client.get(KUEUE_WORKLOADS, name, namespace)
    _set(obj.setdefault("status", {}), kind, True, reason, reason)
    await client.update_status(KUEUE_WORKLOADS, obj)


async def release(client: Client, namespace: str, name: str) -> None:
    """What Kueue's jobframework does once an evicted Workload's job has stopped: Requeued
    (True only after a preemption), then UnsetQuotaReservationWithCondition (Pending)."""
    obj = await client.get(KUEUE_WORKLOADS, name, namespace)
    status = obj["status"]
    evicted = condition(status, "Evicted")
    requeued = evicted["reason"] == "Preempted"
    _set(status, "Requeued", requeued, evicted["reason"], evicted["message"])
    _set(status, "QuotaReserved", False, "Pending", evicted["message"])
    _set(status, "Admitted", False, "NoReservation", "The workload has no reservation")
    del status["admission"]
    await client.update_status(KUEUE_WORKLOADS, obj)


async def test_the_crds_default_and_prune_as_kueues_do(client: Client, namespace: str) -> None:
    await install_kueue_crds(client)
    spec = {"queueName": "team", "unknown": 1, "podSets": [{"template": TEMPLATE}]}
    created = await client.create(KUEUE_WORKLOADS, workload_body(namespace, "plain", spec))
    assert created["spec"]["active"] is True
    assert "unknown" not in created["spec"]
    assert {k: created["spec"]["podSets"][0][k] for k in ("name", "count")} == {
        "name": "main",
        "count": 1,
    }
    assert created["spec"]["podSets"][0]["template"] == TEMPLATE


async def test_two_teams_behind_one_quota_are_admitted_in_order(
    client: Client, namespace: str
) -> None:
    async with kueue_running(client), temporary_namespace(client, "team-b") as other:
        cq = await team_queue(client, namespace, "1")
        await create_local_queue(client, other, "team", cq)
        await workload(client, namespace, "first")
        await wait_for(client, namespace, "first", "Admitted")
        await workload(client, other, "second")
        status = await wait_for(client, other, "second", "QuotaReserved", "False")
        assert condition(status, "QuotaReserved")["message"] == (
            "couldn't assign flavors to pod set workers: insufficient unused quota for cpu in"
            f" flavor default-{namespace}, 1 more needed"
        )
        assert "admission" not in status
        first = await status_of(client, namespace, "first")
        assert first["admission"] == {
            "clusterQueue": cq,
            "podSetAssignments": [
                {
                    "name": "workers",
                    "flavors": {"cpu": f"default-{namespace}"},
                    "resourceUsage": {"cpu": "1"},
                    "count": 1,
                }
            ],
        }
        assert (
            condition(first, "QuotaReserved")["message"] == f"Quota reserved in ClusterQueue {cq}"
        )
        assert condition(first, "Admitted")["reason"] == "Admitted"

        await set_condition(client, namespace, "first", "Finished", "Succeeded")
        status = await wait_for(client, other, "second", "Admitted")
        assert status["admission"]["clusterQueue"] == cq


async def test_the_first_flavour_that_fits_gives_its_node_labels(
    client: Client, namespace: str
) -> None:
    cq, small, large = f"cq-{namespace}", f"on-demand-{namespace}", f"spot-{namespace}"
    async with kueue_running(client):
        await create_flavor(client, small, instance="on-demand")
        await create_flavor(client, large, instance="spot")
        await create_cluster_queue(client, cq, {small: "1", large: "4"})
        await create_local_queue(client, namespace, "team", cq)
        await workload(client, namespace, "fits-first", cpu="1")
        await workload(client, namespace, "needs-more", cpu="2")
        placed = {}
        for name in ("fits-first", "needs-more"):
            status = await wait_for(client, namespace, name, "Admitted")
            (assignment,) = status["admission"]["podSetAssignments"]
            rf = await client.get(KUEUE_RESOURCE_FLAVORS, assignment["flavors"]["cpu"])
            placed[name] = rf["spec"]["nodeLabels"]
        assert placed == {
            "fits-first": {"instance": "on-demand"},
            "needs-more": {"instance": "spot"},
        }


async def test_a_higher_priority_workload_preempts_a_lower_one(
    client: Client, namespace: str
) -> None:
    async with kueue_running(client):
        cq = await team_queue(client, namespace, "2", preemption="LowerPriority")
        await workload(client, namespace, "low", cpu="2", priority=1)
        await wait_for(client, namespace, "low", "Admitted")
        high = await workload(client, namespace, "high", cpu="2", priority=10)

        status = await wait_for(client, namespace, "low", "Evicted", reason="Preempted")
        preempted = condition(status, "Preempted")
        assert preempted["reason"] == "InClusterQueue"
        assert preempted["message"] == condition(status, "Evicted")["message"]
        assert preempted["message"] == (
            f"Preempted to accommodate a workload (UID: {high['metadata']['uid']}, JobUID:"
            f" UNKNOWN) due to prioritization in the ClusterQueue; preemptor path: /{cq};"
            f" preemptee path: /{cq}"
        )
        assert status["admission"]["clusterQueue"] == cq  # held until its job has stopped
        pending = await wait_for(client, namespace, "high", "QuotaReserved", "False")
        assert condition(pending, "QuotaReserved")["message"].endswith(
            ". Pending the preemption of 1 workload(s)"
        )

        await release(client, namespace, "low")
        await wait_for(client, namespace, "high", "Admitted")
        low = await status_of(client, namespace, "low")
        assert (
            condition(low, "Requeued")["status"],
            condition(low, "QuotaReserved")["status"],
        ) == ("True", "False")

        await set_condition(client, namespace, "high", "Finished", "Succeeded")
        low = await wait_for(client, namespace, "low", "Admitted")
        assert condition(low, "Evicted")["status"] == "False"
        assert condition(low, "Evicted")["message"].startswith(
            "Previously: Preempted to accommodate"
        )
        assert low["schedulingStats"]["evictions"] == [{"reason": "Preempted", "count": 1}]


async def test_a_workload_not_ready_in_time_is_evicted_and_requeued(
    client: Client, namespace: str
) -> None:
    wait = WaitForPodsReady(timeout=2, backoff_base=1)
    async with kueue_running(client, wait_for_pods_ready=wait):
        await team_queue(client, namespace, "2")
        await workload(client, namespace, "ready")
        await workload(client, namespace, "slow")
        await wait_for(client, namespace, "ready", "Admitted")
        await set_condition(client, namespace, "ready", "PodsReady", "Started")

        status = await wait_for(client, namespace, "slow", "Evicted", reason="PodsReadyTimeout")
        assert (
            condition(status, "Evicted")["message"]
            == f"Exceeded the PodsReady timeout {namespace}/slow"
        )
        assert status["requeueState"]["count"] == 1 and status["requeueState"]["requeueAt"]
        await release(client, namespace, "slow")
        status = await wait_for(
            client, namespace, "slow", "Requeued", reason="BackoffFinished", timeout=10
        )
        assert condition(status, "Requeued")["message"] == "The workload backoff was finished"
        await wait_for(client, namespace, "slow", "Admitted")
        assert not has(await status_of(client, namespace, "ready"), "Evicted")


async def test_a_deactivated_workload_is_evicted_until_reactivated(
    client: Client, namespace: str
) -> None:
    async with kueue_running(client):
        await team_queue(client, namespace, "1")
        await workload(client, namespace, "job")
        await wait_for(client, namespace, "job", "Admitted")

        await workload(client, namespace, "next")
        await wait_for(client, namespace, "next", "QuotaReserved", "False")

        await client.patch(KUEUE_WORKLOADS, "job", {"spec": {"active": False}}, namespace)
        status = await wait_for(client, namespace, "job", "Evicted", reason="Deactivated")
        assert condition(status, "Evicted")["message"] == "The workload is deactivated"
        # As in Kueue's cache, a deactivated Workload's quota is free before its job stops.
        await wait_for(client, namespace, "next", "Admitted")
        await release(client, namespace, "job")
        status = await wait_for(client, namespace, "job", "QuotaReserved", "False")
        assert condition(status, "Requeued")["status"] == "False"

        await set_condition(client, namespace, "next", "Finished", "Succeeded")
        await client.patch(KUEUE_WORKLOADS, "job", {"spec": {"active": True}}, namespace)
        status = await wait_for(client, namespace, "job", "Admitted")
        assert condition(status, "Requeued")["reason"] == "Reactivated"


async def test_a_pod_set_with_min_count_is_admitted_partially(
    client: Client, namespace: str
) -> None:
    async with kueue_running(client):
        await team_queue(client, namespace, "3")
        await workload(client, namespace, "too-big", count=5)
        await workload(client, namespace, "elastic", count=5, min_count=2)

        status = await wait_for(client, namespace, "elastic", "Admitted")
        (assignment,) = status["admission"]["podSetAssignments"]
        assert (assignment["count"], assignment["resourceUsage"]) == (3, {"cpu": "3"})
        status = await status_of(client, namespace, "too-big")
        assert not has(status, "QuotaReserved")
        assert "> maximum capacity (3)" in condition(status, "QuotaReserved")["message"]


async def test_an_orphan_is_finished_and_loses_the_finalizer(
    client: Client, namespace: str
) -> None:
    async with kueue_running(client):
        orphan = workload_body(
            namespace,
            "orphan",
            {"podSets": [{"template": TEMPLATE}]},
            labels={"kueue.x-k8s.io/job-uid": "gone"},
            finalizers=["kueue.x-k8s.io/resource-in-use"],
        )
        await client.create(KUEUE_WORKLOADS, orphan)
        status = await wait_for(client, namespace, "orphan", "Finished", reason="OwnerNotFound")
        assert condition(status, "Finished")["message"] == "The workload's owner no longer exists"

        async def released() -> bool:
            obj = await client.get(KUEUE_WORKLOADS, "orphan", namespace)
            return not obj["metadata"].get("finalizers")

        await eventually(released)


async def test_past_the_requeue_limit_a_workload_is_deactivated(
    client: Client, namespace: str
) -> None:
    async with kueue_running(
        client, wait_for_pods_ready=WaitForPodsReady(timeout=1, backoff_limit=0)
    ):
        await team_queue(client, namespace, "1")
        await workload(client, namespace, "never-ready")
        reason = "DeactivatedDueToRequeuingLimitExceeded"
        status = await wait_for(client, namespace, "never-ready", "Evicted", reason=reason)
        assert condition(status, "Evicted")["message"] == (
            "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
        )
        obj = await client.get(KUEUE_WORKLOADS, "never-ready", namespace)
        assert obj["spec"]["active"] is False
        assert not has(status, "DeactivationTarget")
