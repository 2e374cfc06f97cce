"""Names of Kubernetes resources and the paths the REST API serves them at."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

Object = dict[str, Any]
"""A Kubernetes object as the API server sends it: plain JSON data."""

DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
"""An RFC 1123 label, as a pattern to build others from; the 63-character bound is apart."""
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
"""An RFC 1035 label, which starts with a letter (a Service's name, a CRD's plural); the
63-character bound is apart."""


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource type of the API, e.g. `Resource("", "v1", "Pod", "pods")`."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path of the collection, or of one object and optionally its subresource."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


PODS = Resource("", "v1", "Pod", "pods")
SERVICES = Resource("", "v1", "Service", "services")
SECRETS = Resource("", "v1", "Secret", "secrets")
CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps")
EVENTS = Resource("", "v1", "Event", "events")
NAMESPACES = Resource("", "v1", "Namespace", "namespaces", namespaced=False)
NODES = Resource("", "v1", "Node", "nodes", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "Lease", "leases")
BATCH_JOBS = Resource("batch", "v1", "Job", "jobs")
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", namespaced=False
)
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    namespaced=False,
)


@dataclass(frozen=True, slots=True, order=True)
class ObjectKey:
    """The namespace and name that identify an object within its resource."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def of(cls, obj: Object) -> ObjectKey:
        meta = obj["metadata"]
        return cls(meta.get("namespace") or "", meta["name"])


def controller_of(obj: Object) -> dict[str, Any] | None:
    """The ownerReference marked `controller: true`, if any."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def run_by_batch_job(obj: Object) -> bool:
    """Whether a batch Job controls `obj` (a pod that Kubernetes' Job controller runs)."""
    ref = controller_of(obj)
    return ref is not None and (ref.get("apiVersion"), ref.get("kind")) == (
        BATCH_JOBS.api_version,
        BATCH_JOBS.kind,
    )


def owner_reference(owner: Object, *, controller: bool = True) -> dict[str, Any]:
    """An ownerReference to `owner`, by default as its controller, blocking foreground deletion."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }
