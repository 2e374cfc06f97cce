"""Kueue's rights, both ways: what jobcore's controller needs on Kueue's objects
(`KUEUE_INTEGRATION_GRANTS`, in its ClusterRole), and what Kueue's own controller needs on
jobcore's kinds, for MultiKueue: an optional manifest.

Kueue's MultiKueue runs a job of a kind it does not know (`multiKueue.externalFrameworks`)
by reading it in the manager cluster, creating a copy of it in a worker cluster, watching
that copy, copying its status back and deleting it when the job is gone. Kueue's own
ClusterRole names only the kinds Kueue integrates, so its ServiceAccount needs these rights
on jobcore's, in the manager and in every worker cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jobcore import NAMESPACES
from jobcore import PRIORITY_CLASSES
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import KUEUE_LOCAL_QUEUES
from jobcore.jobs import KUEUE_RESOURCE_FLAVORS
from jobcore.jobs import KUEUE_WORKLOAD_PRIORITY_CLASSES
from jobcore.jobs import KUEUE_WORKLOADS
from jobcore.jobs import JobKind
from jobcore.jobs import hooks_of

KUEUE_NAMESPACE = "kueue-system"
KUEUE_SERVICE_ACCOUNT = "kueue-controller-manager"
"""Kueue's controller as its release manifests and Helm chart install it."""
NAME = "jobcore-kueue-multikueue"
_RBAC = "rbac.authorization.k8s.io"
KUEUE_INTEGRATION_GRANTS: list[tuple[Resource, tuple[str, ...]]] = [
    # `run --kueue`: a queued job's Workload is made, kept, given back and, when its pod sets
    # change under a quota, deleted; its admission's flavours and the job's priority class are
    # read by name, and the PriorityClasses listed for the cluster's default when the job names
    # none.
    (KUEUE_WORKLOADS, ("list", "watch", "create", "patch", "delete")),
    (
        Resource(
            KUEUE_WORKLOADS.group, KUEUE_WORKLOADS.version, KUEUE_WORKLOADS.kind, "workloads/status"
        ),
        ("patch",),
    ),
    (KUEUE_RESOURCE_FLAVORS, ("get",)),
    (KUEUE_WORKLOAD_PRIORITY_CLASSES, ("get",)),
    (PRIORITY_CLASSES, ("get", "list")),
    # `run --kueue-default-local-queue` caches the LocalQueues named `default`,
    # `--kueue-managed-jobs-namespace-selector` the namespaces' labels.
    (KUEUE_LOCAL_QUEUES, ("list", "watch")),
    (NAMESPACES, ("list", "watch")),
]
"""What jobcore's controller does with Kueue's objects (and those its Kueue options read)."""
_LABELS = {"app.kubernetes.io/name": "jobcore", "app.kubernetes.io/component": "kueue"}


def kueue_rbac(kinds: Sequence[JobKind[Any]]) -> list[Object]:
    """A ClusterRole on the kinds that jobcore queues with Kueue (not those Kueue integrates
    itself) and their status, bound to Kueue's controller's ServiceAccount."""
    queued = [kind.resource for kind in kinds if hooks_of(kind).kueue]
    groups = sorted({r.group for r in queued})
    rules = [
        rule
        for group in groups
        for rule in (
            {
                "apiGroups": [group],
                "resources": sorted(r.plural for r in queued if r.group == group),
                "verbs": ["get", "list", "watch", "create", "delete"],
            },
            {
                "apiGroups": [group],
                "resources": sorted(f"{r.plural}/status" for r in queued if r.group == group),
                "verbs": ["get", "update", "patch"],
            },
        )
    ]
    meta = {"name": NAME, "labels": dict(_LABELS)}
    subject = {"kind": "ServiceAccount", "name": KUEUE_SERVICE_ACCOUNT}
    return [
        {"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole", "metadata": meta, "rules": rules},
        {
            "apiVersion": f"{_RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": NAME},
            "subjects": [{**subject, "namespace": KUEUE_NAMESPACE}],
        },
    ]
