"""What the job layer's caches keep of jobs and children: what it reads, at any size.

A tenant can write objects of up to the API server's limit (about 1.5 MB each) that the job
layer's caches select: jobs of its kinds, and children labelled with a job's name and owned by
it. Cached whole, a few hundred of them outgrow the controller's memory limit, and every team's
jobs stop with it. So a job whose spec is larger than the controller renders is cached as a
stub: its spec dropped but for `runPolicy`, which its clean-up obeys, and its size kept for its
InvalidSpec status. A ConfigMap's or Secret's values are cached as digests: the job layer
compares a ConfigMap's data with what it renders and looks for keys in a Secret, and reads no
value. A child larger than any the controller makes is not one it made: it is cached as its
metadata only, and the job layer reads it as a name taken (`oversized`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from typing import Any

from jobcore._runtime.filing import Transform
from jobcore._runtime.filing import strip_bulk
from jobcore._runtime.jsoncodec import dumps
from jobcore._runtime.resources import CONFIGMAPS
from jobcore._runtime.resources import SECRETS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource
from jobcore._runtime.resources import controller_of

MAX_SPEC_BYTES = 256 * 1024
"""The largest spec, as JSON, that the controller renders: four times a worker template with
2,000 environment variables. A job's pods share its template in the controller's memory, but
each pod the API server stores carries a copy."""
SPEC_BYTES = "jobcore.dev/specBytes"
"""Where a cached job keeps its spec's size as JSON (a stub, the size of the spec it dropped),
so that parse_job reads it rather than measuring again: a top-level key no object the API
server sends has, so that no stored job can name a size of its own."""
MAX_RUN_POLICY_BYTES = 4096
"""The largest `runPolicy` a stub keeps: a valid one is a few fields."""
MAX_CHILD_BYTES = MAX_SPEC_BYTES + 64 * 1024
"""The largest child, as JSON, that the caches keep whole. One the controller made holds one
template of a spec of at most MAX_SPEC_BYTES, what the kind and jobcore add to it (a few
KiB), and what the API server adds: defaults, and a status whose termination messages the
kubelet caps at 12 KiB."""
CHILD_BYTES = "jobcore.dev/childBytes"
"""Where a child cached as its metadata only keeps its size as JSON (see SPEC_BYTES)."""
_IDENTITY = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
MAX_DIGESTED_KEYS = 64
"""Keys a cached ConfigMap or Secret keeps with a digest each; beyond, one digest of all."""
_VALUES = ("data", "binaryData", "stringData")


def job_as_cached(obj: Object) -> Object:
    """`obj` as the jobs cache keeps it: without the bulk no controller reads, and a spec
    larger than MAX_SPEC_BYTES replaced by a stub; its spec's size noted either way."""
    obj = strip_bulk(obj)
    obj.pop(SPEC_BYTES, None)  # only this function notes a size
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    try:
        size = len(dumps(spec))
    except RecursionError:  # nested deeper than Python recurses: parse_job refuses it so
        return obj
    if size > MAX_SPEC_BYTES:
        run_policy = spec.get("runPolicy")
        small = run_policy is not None and len(dumps(run_policy)) <= MAX_RUN_POLICY_BYTES
        obj["spec"] = {"runPolicy": run_policy} if small else {}
    obj[SPEC_BYTES] = size
    return obj


def spec_bytes(obj: Object) -> int:
    """The size of the job's spec as JSON, as stored: as the cache noted it, if it did."""
    noted = obj.get(SPEC_BYTES)
    return noted if isinstance(noted, int) else len(dumps(obj.get("spec") or {}))


@functools.cache
def child_transform(resource: Resource) -> Transform:
    """How the children cache of `resource` keeps its objects: ConfigMaps and Secrets with
    their values digested, the rest without their bulk; either, if still larger than
    MAX_CHILD_BYTES, as its metadata only. One per resource, as the caches are shared."""
    trim = values_as_digests if resource in (CONFIGMAPS, SECRETS) else strip_bulk

    def child_as_cached(obj: Object) -> Object:
        obj = trim(obj)
        obj.pop(CHILD_BYTES, None)  # only this function notes a size
        size = len(dumps(obj))
        return obj if size <= MAX_CHILD_BYTES else _metadata_only(obj, size)

    return child_as_cached


def oversized(obj: Object) -> int | None:
    """The size as JSON of a child cached as its metadata only, too large to be one the
    controller made; None for any other."""
    size = obj.get(CHILD_BYTES)
    return size if isinstance(size, int) else None


def _metadata_only(obj: Object, size: int) -> Object:
    """What mapping, indexing and deleting `obj` read: its identity, its controller, whether
    it is being deleted; and its size."""
    meta = obj["metadata"]
    kept = {key: meta[key] for key in _IDENTITY if key in meta}
    if meta.get("deletionTimestamp"):
        kept["deletionTimestamp"] = meta["deletionTimestamp"]
    if (controller := controller_of(obj)) is not None:
        kept["ownerReferences"] = [controller]
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": kept,
        CHILD_BYTES: size,
    }


def values_as_digests(obj: Object) -> Object:
    """`obj` without its bulk, its `data`, `binaryData` and `stringData` as `digests`."""
    obj = strip_bulk(obj)
    for field in _VALUES:
        values = obj.get(field)
        if isinstance(values, Mapping) and values:
            obj[field] = digests(values)
    return obj


def digests(values: Mapping[str, Any]) -> dict[str, str]:
    """`values` with each value replaced by a digest, which is all the job layer compares;
    beyond MAX_DIGESTED_KEYS keys, one digest of them all under the key ""."""
    if len(values) > MAX_DIGESTED_KEYS:
        return {"": _digest(dumps(sorted(values.items())))}
    return {key: _digest(dumps(value)) for key, value in values.items()}


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()
