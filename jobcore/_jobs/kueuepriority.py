"""A queued job's Workload priority, resolved as Kueue's job framework resolves it.

Kueue's ExtractPriority (pkg/controller/jobframework, pkg/util/priority): the job's
`kueue.x-k8s.io/priority-class` label names a WorkloadPriorityClass; else the first pod set
whose pods name a `priorityClassName` gives that PriorityClass; else the cluster's global
default PriorityClass (the lowest, should there be several); else no class and priority 0.
A class named but missing is an error (NotFoundError): Kueue makes no Workload until it
exists, and retries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jobcore._jobs.kueueapi import GROUP
from jobcore._jobs.kueueapi import PRIORITY_CLASS_LABEL
from jobcore._jobs.kueueapi import WORKLOAD_PRIORITY_CLASSES
from jobcore._jobs.workload import Priority
from jobcore._runtime.client import Client
from jobcore._runtime.resources import PRIORITY_CLASSES
from jobcore._runtime.resources import Object


async def resolve(client: Client, job: Object, pod_sets: Sequence[Object]) -> Priority:
    """The Workload's `priorityClassRef` and `priority` for `job` with these pod sets."""
    label = (job["metadata"].get("labels") or {}).get(PRIORITY_CLASS_LABEL)
    if label:
        found = await client.get(WORKLOAD_PRIORITY_CLASSES, str(label))
        return _ref(GROUP, WORKLOAD_PRIORITY_CLASSES.kind, str(label)), _value(found)
    named = next(filter(None, (_class_name(s) for s in pod_sets)), None)
    if named is not None:
        found = await client.get(PRIORITY_CLASSES, named)
        return _ref(PRIORITY_CLASSES.group, PRIORITY_CLASSES.kind, named), _value(found)
    listed: list[Object] = (await client.list(PRIORITY_CLASSES))["items"]
    defaults = [c for c in listed if c.get("globalDefault") is True]
    if not defaults:
        return None, 0
    lowest = min(defaults, key=_value)
    name = str(lowest["metadata"]["name"])
    return _ref(PRIORITY_CLASSES.group, PRIORITY_CLASSES.kind, name), _value(lowest)


def _class_name(pod_set: Object) -> str | None:
    spec: Any = (pod_set.get("template") or {}).get("spec") or {}
    name = spec.get("priorityClassName")
    return str(name) if name else None


def _ref(group: str, kind: str, name: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "name": name}


def _value(priority_class: Object) -> int:
    value = priority_class.get("value")
    return value if isinstance(value, int) else 0
