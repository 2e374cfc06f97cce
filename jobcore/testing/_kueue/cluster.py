"""What the stand-in knows of the cluster, its own writes included that its caches lag.

Kueue's cache "assumes" its admissions the same way.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from jobcore._runtime.client import Client
from jobcore._runtime.resources import Object
from jobcore.testing._kueue import api


class Assumed:
    """Workloads as the stand-in last wrote them, until its informer has seen that write.

    A write is remembered with the resourceVersion it replaced: while the cache still holds
    that version, the written object stands in for it; any other version means the cache has
    caught up (or someone wrote since), and the cache is believed again.
    """

    def __init__(self) -> None:
        self._written: dict[str, tuple[str, Object]] = {}

    def view(self, cached: Object) -> Object:
        name = api.key(cached)
        entry = self._written.get(name)
        if entry is None:
            return cached
        before, written = entry
        if cached["metadata"].get("resourceVersion") == before:
            return written
        del self._written[name]
        return cached

    def remember(self, before: Object, written: Object) -> None:
        self._written[api.key(written)] = (before["metadata"].get("resourceVersion", ""), written)

    def forget(self, name: str) -> None:
        self._written.pop(name, None)


async def write_status(client: Client, assumed: Assumed, before: Object, changed: Object) -> Object:
    """Replace the Workload's status (ConflictError if it changed since `before`)."""
    written = await client.update_status(api.WORKLOADS, changed)
    assumed.remember(before, written)
    return written


async def write(client: Client, assumed: Assumed, before: Object, changed: Object) -> Object:
    """Replace the Workload (its metadata or spec)."""
    written = await client.update(api.WORKLOADS, changed)
    assumed.remember(before, written)
    return written


def editable(workload: Object) -> Object:
    """A copy to change: cached objects are shared and never modified in place."""
    return copy.deepcopy(workload)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The Workloads (as assumed), LocalQueues by (namespace, name), ClusterQueues,
    ResourceFlavors and AdmissionChecks by name, and the order in which the stand-in first saw
    each Workload."""

    workloads: list[Object]
    local_queues: dict[tuple[str, str], Object]
    cluster_queues: dict[str, Object]
    flavors: dict[str, Object]
    seen: dict[str, int]
    admission_checks: dict[str, Object]

    def local_queue(self, workload: Object) -> Object | None:
        queue = workload.get("spec", {}).get("queueName")
        return self.local_queues.get((workload["metadata"].get("namespace", ""), queue or ""))

    def cluster_queue_name(self, workload: Object) -> str | None:
        queue = self.local_queue(workload)
        return None if queue is None else queue.get("spec", {}).get("clusterQueue")

    def blocker(self, workload: Object) -> str | None:
        """Why the Workload's queues cannot admit it (the workload controller's
        getQueueBlocker messages), None if they can."""
        queue_name = workload.get("spec", {}).get("queueName") or ""
        queue = self.local_queue(workload)
        if queue is None:
            return f"LocalQueue {queue_name} doesn't exist"
        if _stopped(queue):
            return f"LocalQueue {queue_name} is inactive"
        name = queue.get("spec", {}).get("clusterQueue", "")
        cluster_queue = self.cluster_queues.get(name)
        if cluster_queue is None:
            return f"ClusterQueue {name} doesn't exist"
        if not self.cluster_queue_active(cluster_queue):
            return f"ClusterQueue {name} is inactive"
        return None

    def cluster_queue_active(self, cluster_queue: Object) -> bool:
        """Active: every flavour and admission check it names exists, and it is not stopped."""
        if _stopped(cluster_queue):
            return False
        groups = cluster_queue.get("spec", {}).get("resourceGroups") or []
        checks = [rule.get("name") for rule in _check_rules(cluster_queue)]
        return all(f["name"] in self.flavors for g in groups for f in g.get("flavors") or []) and (
            all(name in self.admission_checks for name in checks)
        )


def required_checks(workload: Object, cluster_queue: Object) -> list[str]:
    """AdmissionChecksForWorkload, sorted: the ClusterQueue's checks for all its flavours, and,
    once admitted, those whose `onFlavors` name a flavour of the admission."""
    admission = (workload.get("status") or {}).get("admission") or {}
    assigned = {
        str(flavor)
        for assignment in admission.get("podSetAssignments") or ()
        for flavor in (assignment.get("flavors") or {}).values()
    }
    return sorted(
        str(rule["name"])
        for rule in _check_rules(cluster_queue)
        if not rule.get("onFlavors") or assigned & set(rule["onFlavors"])
    )


def _check_rules(cluster_queue: Object) -> list[Object]:
    strategy = cluster_queue.get("spec", {}).get("admissionChecksStrategy") or {}
    return [rule for rule in strategy.get("admissionChecks") or () if rule.get("name")]


def _stopped(queue: Object) -> bool:
    policy: Any = queue.get("spec", {}).get("stopPolicy") or "None"
    return bool(policy != "None")


def holds_quota(workload: Object) -> bool:
    """HasActiveQuotaReservation, what a ClusterQueue's usage counts: reserved, not Finished,
    and active (Kueue's cache drops a deactivated Workload before its job has stopped)."""
    return (
        api.is_true(workload, api.QUOTA_RESERVED)
        and not api.is_true(workload, api.FINISHED)
        and api.is_active(workload)
    )
