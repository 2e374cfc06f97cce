"""The deployable manifests: CRDs from the kinds' models, least-privilege RBAC, the Deployment."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from jobcore import (
    EVENTS,
    LEASES,
    JobKind,
    Object,
    Resource,
    SchedulerPlugins,
    T9kScheduler,
    Volcano,
    write_crds,
)

NAMESPACE = "jobcore-system"
NAME = "jobcore-controller"
IMAGE = f"jobcore:{metadata.version('jobcore')}"
"""The image the Deployment runs: tagged with the project's version, never `latest`, so a
manifest names the one build it was written for."""
_LABELS = {"app.kubernetes.io/name": "jobcore", "app.kubernetes.io/component": "controller"}


def _meta(name: str, namespace: str | None = NAMESPACE) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(_LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _rule(resources: Iterable[Resource], verbs: Sequence[str]) -> list[dict[str, Any]]:
    by_group: dict[str, list[str]] = {}
    for resource in resources:
        by_group.setdefault(resource.group, []).append(resource.plural)
    return [
        {"apiGroups": [group], "resources": sorted(set(plurals)), "verbs": list(verbs)}
        for group, plurals in sorted(by_group.items())
    ]


def rbac(kinds: Sequence[JobKind[Any]], namespace: str = NAMESPACE) -> list[Object]:
    """What the controller may do, and nothing more: no wildcard verbs or resources."""
    jobs = [kind.resource for kind in kinds]
    statuses = [Resource(r.group, r.version, r.kind, f"{r.plural}/status") for r in jobs]
    # Children carry blockOwnerDeletion, which needs `update` on the owner's finalizers
    # where the OwnerReferencesPermissionEnforcement admission plugin runs (e.g. OpenShift).
    finalizers = [Resource(r.group, r.version, r.kind, f"{r.plural}/finalizers") for r in jobs]
    children = {c for kind in kinds for c in kind.child_resources}
    pod_groups = [T9kScheduler.resource, Volcano.resource, SchedulerPlugins.resource]
    cluster_rules = [
        # delete: runPolicy.ttlSecondsAfterFinished deletes a finished job.
        *_rule(jobs, ["get", "list", "watch", "delete"]),
        *_rule(statuses, ["get", "patch", "update"]),
        *_rule(finalizers, ["update"]),
        *_rule(
            sorted(children, key=lambda r: r.plural), ["get", "list", "watch", "create", "delete"]
        ),
        # The job reconciler keeps ConfigMaps' data current (hostfiles, discovery scripts).
        *_rule([c for c in children if c.kind == "ConfigMap"], ["patch"]),
        *_rule([EVENTS], ["create", "patch"]),
        # Each job's PodGroup, server-side applied: created, or patched when the spec changes.
        *_rule(pod_groups, ["get", "create", "patch"]),
    ]
    lease_rules = _rule([LEASES], ["get", "create", "update"])
    subject = [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace, None)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, namespace)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(NAME, None),
            "rules": cluster_rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(NAME, None),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": NAME,
            },
            "subjects": subject,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(f"{NAME}-leader-election", namespace),
            "rules": lease_rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(f"{NAME}-leader-election", namespace),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": f"{NAME}-leader-election",
            },
            "subjects": subject,
        },
    ]


def deployment(namespace: str = NAMESPACE, image: str = IMAGE) -> list[Object]:
    """The controller: two replicas with leader election, probes and the metrics port.

    Its namespace comes with the RBAC objects, which are applied first.
    """
    probe = {"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 10}
    container = {
        "name": "controller",
        "image": image,
        "args": [
            "--log-format",
            "json",
            "run",
            "--leader-elect",
            "--leader-election-namespace",
            namespace,
        ],
        "ports": [
            {"name": "metrics", "containerPort": 8080},
            {"name": "health", "containerPort": 8081},
        ],
        "livenessProbe": {**probe, "initialDelaySeconds": 10},
        "readinessProbe": {**probe, "httpGet": {"path": "/readyz", "port": "health"}},
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "512Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    spread = {
        "weight": 100,
        "podAffinityTerm": {
            "labelSelector": {"matchLabels": dict(_LABELS)},
            "topologyKey": "kubernetes.io/hostname",
        },
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(NAME, namespace),
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": dict(_LABELS)},
                # One replica at a time: the other keeps (or takes over) the lease meanwhile.
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
                },
                "template": {
                    "metadata": {"labels": dict(_LABELS)},
                    "spec": {
                        "serviceAccountName": NAME,
                        "terminationGracePeriodSeconds": 45,
                        # Pod Security "restricted": non-root, and the runtime's seccomp profile.
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 65532,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "affinity": {
                            "podAntiAffinity": {
                                "preferredDuringSchedulingIgnoredDuringExecution": [spread]
                            }
                        },
                        "containers": [container],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(f"{NAME}-metrics", namespace),
            "spec": {
                "selector": dict(_LABELS),
                "ports": [{"name": "metrics", "port": 8080, "targetPort": "metrics"}],
            },
        },
    ]


def disruption_budget(namespace: str = NAMESPACE) -> list[Object]:
    """At most one of the two replicas evicted at a time: a standby is always there to lead.

    `policy/v1`, served from Kubernetes 1.21 on (1.20 has only `policy/v1beta1`).
    """
    return [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta(NAME, namespace),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(_LABELS)}},
        }
    ]


def _kustomization(resources: Sequence[str]) -> Object:
    """Files only under `resources`: the kustomize inside kubectl 1.20 takes no folders there."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": list(resources),
    }


def _dump(path: Path, objects: Sequence[Object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return path


def write_manifests(kinds: Sequence[JobKind[Any]], output: str | Path) -> list[Path]:
    """Write a kustomize layout under `output`: `crds/`, `rbac/`, `deploy/` and a
    `kustomization.yaml` installing them (`kubectl apply -k`), and one for the job samples
    found in `samples/` (kept by hand)."""
    root = Path(output)
    written = [
        *write_crds(kinds, root / "crds"),
        _dump(root / "rbac" / "rbac.yaml", rbac(kinds)),
        _dump(root / "deploy" / "controller.yaml", deployment()),
        _dump(root / "deploy" / "pdb.yaml", disruption_budget()),
    ]
    names = sorted(str(path.relative_to(root)) for path in written)
    written.append(_dump(root / "kustomization.yaml", [_kustomization(names)]))
    samples = sorted(path.name for path in (root / "samples").glob("*.yaml"))
    if samples:
        samples = [name for name in samples if name != "kustomization.yaml"]
        written.append(_dump(root / "samples" / "kustomization.yaml", [_kustomization(samples)]))
    return written
