"""The dashboard's optional in-cluster install: `kubectl apply -k manifests/dashboard`, then
`kubectl -n jobcore-system port-forward deploy/jobcore-dashboard 8080`.

It reads and never writes: its ClusterRole grants get, list and watch on the kinds, pods and
Events and get on `pods/log`, and nothing on Secrets. It listens on the pod's loopback only,
which `kubectl port-forward` reaches and no other pod does; a NetworkPolicy admits no ingress
besides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controllers.podsecurity import restricted_container
from controllers.podsecurity import restricted_pod
from jobcore import EVENTS
from jobcore import PODS
from jobcore import Object
from jobcore.jobs import JobKind

NAME = "jobcore-dashboard"
PORT = 8080
_LABELS = {"app.kubernetes.io/name": "jobcore", "app.kubernetes.io/component": "dashboard"}
_RBAC = "rbac.authorization.k8s.io"
_READ = ("get", "list", "watch")


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(_LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def dashboard_rbac(kinds: Sequence[JobKind[Any]], namespace: str) -> list[Object]:
    """Its ServiceAccount in `namespace` and a read-only ClusterRole bound to it."""
    by_group: dict[str, list[str]] = {}
    for kind in kinds:
        by_group.setdefault(kind.resource.group, []).append(kind.resource.plural)
    rules = [
        {"apiGroups": [group], "resources": sorted(set(plurals)), "verbs": list(_READ)}
        for group, plurals in sorted(by_group.items())
    ]
    rules += [
        {"apiGroups": [""], "resources": [PODS.plural, EVENTS.plural], "verbs": list(_READ)},
        {"apiGroups": [""], "resources": [f"{PODS.plural}/log"], "verbs": ["get"]},
    ]
    subject = {"kind": "ServiceAccount", "name": NAME, "namespace": namespace}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, namespace)},
        {
            "apiVersion": f"{_RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": _meta(NAME),
            "rules": rules,
        },
        {
            "apiVersion": f"{_RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(NAME),
            "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": NAME},
            "subjects": [subject],
        },
    ]


def dashboard_deployment(namespace: str, image: str) -> list[Object]:
    """One replica of `jobcore dashboard` on the pod's loopback, and a NetworkPolicy that
    admits nothing to the pod."""
    # The pages are on the pod's loopback, which the kubelet's HTTP probes cannot reach: the
    # container asks itself, until it answers once; the pod is Ready (and `rollout status`
    # done) only then.
    answers = f"import urllib.request as u; u.urlopen('http://127.0.0.1:{PORT}/healthz', timeout=2)"
    container = {
        "name": "dashboard",
        "image": image,
        "args": ["--log-format", "json", "dashboard", "--port", str(PORT)],
        "startupProbe": {
            "exec": {"command": ["python", "-c", answers]},
            "periodSeconds": 1,
            "failureThreshold": 120,
        },
        "resources": {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"memory": "512Mi"},
        },
        "securityContext": restricted_container(),
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(NAME, namespace),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": dict(_LABELS)},
                "template": {
                    "metadata": {"labels": dict(_LABELS)},
                    "spec": {
                        "serviceAccountName": NAME,
                        "securityContext": restricted_pod(),
                        "containers": [container],
                    },
                },
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta(NAME, namespace),
            "spec": {"podSelector": {"matchLabels": dict(_LABELS)}, "policyTypes": ["Ingress"]},
        },
    ]


def dashboard_files(
    kinds: Sequence[JobKind[Any]], namespace: str, image: str
) -> dict[str, list[Any]]:
    """The files of `manifests/dashboard/` by name, but its kustomization.yaml."""
    return {
        "dashboard.yaml": dashboard_deployment(namespace, image),
        "rbac.yaml": dashboard_rbac(kinds, namespace),
    }
