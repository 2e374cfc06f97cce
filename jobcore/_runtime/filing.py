"""How a cache files an object: the indexes it is found by, and what of it is kept.

Apart from the informer that applies them, so that the job layer's transforms and filters
build on them without the list+watch machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable

from jobcore._runtime.resources import Object
from jobcore._runtime.resources import controller_of

IndexFunc = Callable[[Object], Iterable[str]]
"""Maps an object to the index values it is filed under."""
Transform = Callable[[Object], Object]
"""Rewrites an object before it is cached, e.g. to drop fields nobody reads."""
Keep = Callable[[Object], bool]
"""Says whether an object is cached; the informer forgets, as it arrives, any it refuses."""

NAMESPACE_INDEX = "namespace"
CONTROLLER_UID_INDEX = "controller-uid"
_BULK_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


def index_by_namespace(obj: Object) -> Iterable[str]:
    return (obj["metadata"].get("namespace") or "",)


def index_by_controller_uid(obj: Object) -> Iterable[str]:
    """`<namespace>/<uid>` of the controller owner: an owner reference names an owner in its
    object's own namespace, so an object elsewhere that names a job's uid is not its child."""
    ref = controller_of(obj)
    return (controller_key(obj["metadata"].get("namespace") or "", ref["uid"]),) if ref else ()


def controller_key(namespace: str, uid: str) -> str:
    """The `CONTROLLER_UID_INDEX` value of the objects in `namespace` that `uid` controls."""
    return f"{namespace}/{uid}"


def strip_bulk(obj: Object) -> Object:
    """The default transform: drop managedFields and last-applied annotations, which no
    controller reads and which can be most of an object's size."""
    meta = obj.get("metadata")
    if meta:
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if annotations:
            for name in _BULK_ANNOTATIONS:
                annotations.pop(name, None)
    return obj
