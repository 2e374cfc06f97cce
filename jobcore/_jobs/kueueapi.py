"""Kueue's API as jobcore speaks it: resources, labels, condition types and reasons.

Conditions are set as Kueue sets them (apis/kueue/v1beta2, pkg/workload), for the job
layer's integration and the testing kit's stand-in alike.
"""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from typing import Any

from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
"""The version Kueue stores (`+kubebuilder:storageversion`) since v0.16; v1beta1 is served
too, but deprecated and converted by Kueue's webhook."""

WORKLOADS = Resource(GROUP, VERSION, "Workload", "workloads")
LOCAL_QUEUES = Resource(GROUP, VERSION, "LocalQueue", "localqueues")
CLUSTER_QUEUES = Resource(GROUP, VERSION, "ClusterQueue", "clusterqueues", namespaced=False)
RESOURCE_FLAVORS = Resource(GROUP, VERSION, "ResourceFlavor", "resourceflavors", namespaced=False)
WORKLOAD_PRIORITY_CLASSES = Resource(
    GROUP, VERSION, "WorkloadPriorityClass", "workloadpriorityclasses", namespaced=False
)

RESOURCE_IN_USE_FINALIZER = "kueue.x-k8s.io/resource-in-use"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
PREBUILT_WORKLOAD = "kueue.x-k8s.io/prebuilt-workload-name"
"""The label (or annotation) naming the Workload made for a job before it (MultiKueue's)."""
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
POD_SET_LABEL = "kueue.x-k8s.io/podset"

# Workload condition types (apis/kueue/v1beta2/workload_types.go).
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
REQUEUED = "Requeued"
PODS_READY = "PodsReady"
FINISHED = "Finished"

# Reasons.
PENDING = "Pending"
INADMISSIBLE = "Inadmissible"
EVICTED_BY_PREEMPTION = "Preempted"
EVICTED_BY_PODS_READY_TIMEOUT = "PodsReadyTimeout"
DEACTIVATED = "Deactivated"
REACTIVATED = "Reactivated"
BACKOFF_FINISHED = "BackoffFinished"
IN_CLUSTER_QUEUE = "InClusterQueue"
WAIT_FOR_START = "WaitForStart"

MAX_MESSAGE = 32 * 1024
"""metav1.Condition's message bound; Kueue truncates to it (api.TruncateConditionMessage)."""


def now() -> str:
    """The current time as the API server writes it (RFC 3339, whole seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def conditions(workload: Object) -> list[Object]:
    return list(workload.get("status", {}).get("conditions") or [])


def find(items: list[Object], kind: str) -> Object | None:
    """The condition of type `kind`, as apimeta.FindStatusCondition finds it."""
    return next((c for c in items if c.get("type") == kind), None)


def is_true(workload: Object, kind: str) -> bool:
    found = find(conditions(workload), kind)
    return found is not None and found.get("status") == "True"


def set_condition(
    items: list[Object],
    kind: str,
    status: bool,
    reason: str,
    message: str,
    *,
    generation: int | None = None,
    at: str | None = None,
) -> bool:
    """Set a condition as apimeta.SetStatusCondition does: its lastTransitionTime changes only
    with its status. Returns whether anything changed."""
    value = "True" if status else "False"
    new: dict[str, Any] = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message[:MAX_MESSAGE],
        "lastTransitionTime": at or now(),
    }
    if generation is not None:
        new["observedGeneration"] = generation
    for index, old in enumerate(items):
        if old.get("type") != kind:
            continue
        if old.get("status") == value:
            new["lastTransitionTime"] = old.get("lastTransitionTime", new["lastTransitionTime"])
        if old == new:
            return False
        items[index] = new
        return True
    items.append(new)
    return True


def is_active(workload: Object) -> bool:
    """spec.active, true unless set to false (workload.IsActive)."""
    return workload.get("spec", {}).get("active", True) is not False
