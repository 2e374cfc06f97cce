"""A job's Kueue Workload, as Kueue's job framework builds one for a job it manages.

Kueue admits a job through its Workload: the pods the job will run, in ordered pod sets of a
template and a count each. jobcore builds them for any kind from the kind's own render of all
the job's pods (as for a gang scheduler, which also needs every pod before any runs), so a
kind declares nothing for Kueue unless a pod set may be admitted partially (`min_counts`).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from jobcore._jobs.kind import REPLICA_TYPE_LABEL
from jobcore._jobs.kind import Job
from jobcore._jobs.kind import JobKind
from jobcore._jobs.kind import Observed
from jobcore._jobs.kueueapi import JOB_UID_LABEL
from jobcore._jobs.kueueapi import PREBUILT_WORKLOAD
from jobcore._jobs.kueueapi import QUEUE_NAME_LABEL
from jobcore._jobs.kueueapi import RESOURCE_IN_USE_FINALIZER
from jobcore._jobs.kueueapi import WORKLOADS
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import owner_reference

_NAME_LIMIT = 253
_HASH_LENGTH = 5
_TEMPLATE_METADATA = ("labels", "annotations")
"""The only metadata a Workload's pod set template keeps."""
_PER_POD_FIELDS = ("hostname",)
"""Fields of one pod, not of its pod set."""

Priority = tuple[Mapping[str, str] | None, int]
"""A Workload's `priorityClassRef` (None: none) and `priority`."""


def queue_name(obj: Object) -> str | None:
    """The LocalQueue the job asks for (Kueue's queue-name label), if any: such a job is
    Kueue's to admit."""
    value = (obj["metadata"].get("labels") or {}).get(QUEUE_NAME_LABEL)
    return value if isinstance(value, str) and value else None


def prebuilt_name(obj: Object) -> str | None:
    """The Workload made for the job before it, which it uses instead of its own (Kueue's
    annotation, else its label, as MultiKueue writes one or the other on a worker's copy)."""
    meta = obj["metadata"]
    for found in (meta.get("annotations") or {}, meta.get("labels") or {}):
        value = found.get(PREBUILT_WORKLOAD)
        if isinstance(value, str) and value:
            return value
    return None


def workload_name(kind: str, group: str, name: str, uid: str) -> str:
    """The name Kueue's job framework gives a job's Workload: `<kind>-<job>`, cut to fit, and
    five hex digits of a hash of the kind, its API group, the job's name and uid, so a job
    recreated under the same name gets another Workload."""
    digest = hashlib.sha1("\n".join((kind, group, name, uid)).encode()).hexdigest()
    prefix = f"{kind.lower()}-{name}"[: _NAME_LIMIT - 1 - _HASH_LENGTH]
    return f"{prefix}-{digest[:_HASH_LENGTH]}"


def pod_sets(
    kind: JobKind[Any], job: Job[Any], min_counts: Mapping[str, int] | None = None
) -> list[Object]:
    """The job's pods as Kueue's pod sets, in the kind's replica-type order: each type's first
    pod as the template (only its labels and annotations kept of its metadata), how many
    there are, and the `min_counts` (by replica type) Kueue may admit instead.

    The pods are the kind's render of the whole job with no child yet, as a gang scheduler's
    plan sees it, so a launcher that the kind creates later is counted from the start.
    """
    whole = dataclasses.replace(job, gang=True)
    rendered = [c for c in kind.render(whole, Observed({})) if c.get("kind") == PODS.kind]
    by_type: dict[str, list[Object]] = {}
    for pod in rendered:
        replica_type = (pod["metadata"].get("labels") or {}).get(REPLICA_TYPE_LABEL, "")
        by_type.setdefault(str(replica_type), []).append(pod)
    order = [t for t in kind.replica_types if t in by_type]
    order += sorted(t for t in by_type if t not in order)
    return [_pod_set(name, by_type[name], (min_counts or {}).get(name)) for name in order]


def _pod_set(replica_type: str, pods: Sequence[Object], min_count: int | None) -> Object:
    first = pods[0]
    metadata = {k: first["metadata"][k] for k in _TEMPLATE_METADATA if first["metadata"].get(k)}
    spec = {k: v for k, v in first["spec"].items() if k not in _PER_POD_FIELDS}
    pod_set: Object = {
        "name": replica_type.lower(),
        "count": len(pods),
        "template": {"metadata": copy.deepcopy(metadata), "spec": copy.deepcopy(spec)},
    }
    if min_count is not None and min_count < len(pods):
        pod_set["minCount"] = min_count
    return pod_set


def new_workload(
    job: Job[Any], group: str, queue: str, sets: Sequence[Object], priority: Priority
) -> Object:
    """The Workload Kueue's job framework would create for `job`: owned by it, with Kueue's
    finalizer (Kueue keeps its quota while the finalizer is there), its queue and pod sets."""
    spec: Object = {"podSets": list(sets), "priority": priority[1]}
    if queue:  # none: queued by the controller's configuration, in no LocalQueue yet
        spec["queueName"] = queue
    if priority[0] is not None:
        spec["priorityClassRef"] = dict(priority[0])
    return {
        "apiVersion": WORKLOADS.api_version,
        "kind": WORKLOADS.kind,
        "metadata": {
            "name": workload_name(job.kind, group, job.name, job.uid),
            "namespace": job.namespace,
            "labels": {JOB_UID_LABEL: job.uid},
            "finalizers": [RESOURCE_IN_USE_FINALIZER],
            "ownerReferences": [owner_reference(job.obj)],
        },
        "spec": spec,
    }


def same_pod_sets(workload: Object, sets: Sequence[Object]) -> bool:
    """Whether the Workload asks for these pod sets: their names, counts and minimums, and
    each container's name and resources, as Kueue compares them (what quota depends on).

    Not whole templates: an API server that defaults a pod template's fields (Kueue's full
    schema does) would make every comparison differ, and the Workload be rebuilt each pass.
    """
    given = workload.get("spec", {}).get("podSets") or []
    return [_demand(s) for s in given] == [_demand(s) for s in sets]


def _demand(pod_set: Object) -> tuple[Any, ...]:
    spec = (pod_set.get("template") or {}).get("spec") or {}
    containers = tuple(
        (c.get("name"), c.get("resources") or {})
        for field in ("initContainers", "containers")
        for c in spec.get(field) or ()
    )
    return pod_set.get("name"), pod_set.get("count"), pod_set.get("minCount"), containers
