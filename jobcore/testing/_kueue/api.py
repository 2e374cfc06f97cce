"""Kueue's API as the stand-in speaks it.

The job layer's names (`jobcore._jobs.kueueapi`), re-exported, and what only the stand-in
needs.
"""

from __future__ import annotations

from datetime import UTC
from datetime import datetime

from jobcore._jobs.kueueapi import ADMITTED
from jobcore._jobs.kueueapi import BACKOFF_FINISHED
from jobcore._jobs.kueueapi import CLUSTER_QUEUES
from jobcore._jobs.kueueapi import DEACTIVATED
from jobcore._jobs.kueueapi import EVICTED
from jobcore._jobs.kueueapi import EVICTED_BY_PODS_READY_TIMEOUT
from jobcore._jobs.kueueapi import EVICTED_BY_PREEMPTION
from jobcore._jobs.kueueapi import FINISHED
from jobcore._jobs.kueueapi import GROUP
from jobcore._jobs.kueueapi import IN_CLUSTER_QUEUE
from jobcore._jobs.kueueapi import INADMISSIBLE
from jobcore._jobs.kueueapi import JOB_UID_LABEL
from jobcore._jobs.kueueapi import LOCAL_QUEUES
from jobcore._jobs.kueueapi import MAX_MESSAGE
from jobcore._jobs.kueueapi import PENDING
from jobcore._jobs.kueueapi import PODS_READY
from jobcore._jobs.kueueapi import PREEMPTED
from jobcore._jobs.kueueapi import QUEUE_NAME_LABEL
from jobcore._jobs.kueueapi import QUOTA_RESERVED
from jobcore._jobs.kueueapi import REACTIVATED
from jobcore._jobs.kueueapi import REQUEUED
from jobcore._jobs.kueueapi import RESOURCE_FLAVORS
from jobcore._jobs.kueueapi import RESOURCE_IN_USE_FINALIZER
from jobcore._jobs.kueueapi import VERSION
from jobcore._jobs.kueueapi import WAIT_FOR_START
from jobcore._jobs.kueueapi import WORKLOAD_PRIORITY_CLASSES
from jobcore._jobs.kueueapi import WORKLOADS
from jobcore._jobs.kueueapi import conditions
from jobcore._jobs.kueueapi import find
from jobcore._jobs.kueueapi import is_active
from jobcore._jobs.kueueapi import is_true
from jobcore._jobs.kueueapi import now
from jobcore._jobs.kueueapi import set_condition
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource

__all__ = [
    "ADMISSION_CHECKS",
    "ADMITTED",
    "BACKOFF_FINISHED",
    "CLUSTER_QUEUES",
    "DEACTIVATED",
    "EVICTED",
    "EVICTED_BY_PODS_READY_TIMEOUT",
    "EVICTED_BY_PREEMPTION",
    "FINISHED",
    "GROUP",
    "INADMISSIBLE",
    "IN_CLUSTER_QUEUE",
    "JOB_UID_LABEL",
    "LOCAL_QUEUES",
    "MAX_MESSAGE",
    "PENDING",
    "PODS_READY",
    "PREEMPTED",
    "QUEUE_NAME_LABEL",
    "QUOTA_RESERVED",
    "REACTIVATED",
    "REQUEUED",
    "RESOURCE_FLAVORS",
    "RESOURCE_IN_USE_FINALIZER",
    "VERSION",
    "WAIT_FOR_START",
    "WORKLOADS",
    "WORKLOAD_PRIORITY_CLASSES",
    "conditions",
    "find",
    "is_active",
    "is_true",
    "key",
    "now",
    "priority",
    "seconds_since",
    "set_condition",
]


ADMISSION_CHECKS = Resource(GROUP, VERSION, "AdmissionCheck", "admissionchecks", namespaced=False)
"""Served for a test to play an admission check's controller; no job integration reads it."""


def seconds_since(timestamp: str) -> float:
    """Seconds from `timestamp` (RFC 3339) until now."""
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return (datetime.now(UTC) - moment).total_seconds()


def priority(workload: Object) -> int:
    value = workload.get("spec", {}).get("priority")
    return value if isinstance(value, int) else 0


def key(obj: Object) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"
