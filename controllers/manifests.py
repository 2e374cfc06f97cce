"""The deployable manifests: CRDs from the kinds' models, least-privilege RBAC, the Deployment."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from controllers.dashboard.manifests import dashboard_files
from controllers.kueuerbac import KUEUE_INTEGRATION_GRANTS
from controllers.kueuerbac import kueue_rbac
from controllers.podsecurity import restricted_container
from controllers.podsecurity import restricted_pod
from jobcore import BATCH_JOBS
from jobcore import CONFIGMAPS
from jobcore import EVENTS
from jobcore import LEASES
from jobcore import PODS
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import JobKind
from jobcore.jobs import SchedulerPlugins
from jobcore.jobs import T9kScheduler
from jobcore.jobs import Volcano
from jobcore.jobs import write_crds

NAMESPACE = "jobcore-system"
"""Where the cluster-wide install runs the controller."""
NAME = "jobcore-controller"
IMAGE = f"jobcore:{metadata.version('jobcore-k8s')}"
"""The image the Deployment runs: tagged with the project's version, never `latest`, so a
manifest names the one build it was written for."""
METRICS_PORT = 8080
HEALTH_PORT = 8081
_LABELS = {"app.kubernetes.io/name": "jobcore", "app.kubernetes.io/component": "controller"}
CONTROLLER_SELECTOR = ",".join(f"{key}={value}" for key, value in _LABELS.items())
"""The label selector of the controller's pods (kubectl -l)."""
_RBAC = "rbac.authorization.k8s.io"
_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
"""The verbs a rule may grant, in the order rules list them."""

Grant = tuple[Resource, tuple[str, ...]]
"""A resource and the verbs of the controller's calls on it."""


def _meta(name: str, namespace: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(_LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _subresource(resource: Resource, name: str) -> Resource:
    return Resource(resource.group, resource.version, resource.kind, f"{resource.plural}/{name}")


def _child_verbs(child: Resource) -> tuple[str, ...]:
    """Children are cached (list, watch) and created; `get` reads one whose create found it
    there already, to check its owner. The job reconciler deletes only Pods (restarts,
    scale-down, clean-up policies) and batch Jobs (a suspended Kubeflow MPIJob's launcher):
    the garbage collector removes the other children with their job. It changes only
    ConfigMaps (a hostfile after a scale change, an elastic HorovodJob's discovery script)."""
    verbs = ("get", "list", "watch", "create")
    if child in (PODS, BATCH_JOBS):
        return (*verbs, "delete")
    if child == CONFIGMAPS:
        return (*verbs, "patch")
    return verbs


def grants(kinds: Sequence[JobKind[Any]]) -> list[Grant]:
    """Every call the controller makes on the API server, outside its Lease, as resource and
    verbs: what its Role or ClusterRole grants, and no more."""
    jobs = [kind.resource for kind in kinds]
    children = sorted({c for kind in kinds for c in kind.child_resources}, key=lambda r: r.plural)
    pod_groups = [T9kScheduler.resource, Volcano.resource, SchedulerPlugins.resource]
    return [
        # The jobs are cached; runPolicy.ttlSecondsAfterFinished deletes a job that ended.
        *((job, ("list", "watch", "delete")) for job in jobs),
        # Status is written as a merge patch of the status subresource.
        *((_subresource(job, "status"), ("patch",)) for job in jobs),
        # Children carry blockOwnerDeletion, which needs `update` on the owner's finalizers
        # where the OwnerReferencesPermissionEnforcement admission plugin runs (e.g. OpenShift).
        *((_subresource(job, "finalizers"), ("update",)) for job in jobs),
        *((child, _child_verbs(child)) for child in children),
        # An Event is created, then patched (count, lastTimestamp) each time it happens again.
        (EVENTS, ("create", "patch")),
        # A job's PodGroup is read first (one another object controls is left alone), then
        # server-side applied: a PATCH, which the API server authorizes as `create` too while
        # the PodGroup does not exist.
        *((pod_group, ("get", "create", "patch")) for pod_group in pod_groups),
        *KUEUE_INTEGRATION_GRANTS,
    ]


def _rules(granted: Iterable[Grant]) -> list[dict[str, Any]]:
    """One rule per API group and set of verbs, in the order first granted."""
    merged: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for resource, verbs in granted:
        key = (resource.group, tuple(verb for verb in _VERBS if verb in verbs))
        merged.setdefault(key, set()).add(resource.plural)
    return [
        {"apiGroups": [group], "resources": sorted(plurals), "verbs": list(verbs)}
        for (group, verbs), plurals in merged.items()
    ]


def _lease_rules() -> list[dict[str, Any]]:
    """The leader-election Lease: created once, then read and renewed by name (RBAC cannot
    limit `create` to a name)."""
    return [
        {"apiGroups": [LEASES.group], "resources": [LEASES.plural], "verbs": ["create"]},
        {
            "apiGroups": [LEASES.group],
            "resources": [LEASES.plural],
            "resourceNames": [NAME],
            "verbs": ["get", "update"],
        },
    ]


def _role_and_binding(
    kind: str, name: str, namespace: str | None, rules: list[dict[str, Any]], home: str
) -> list[Object]:
    """A Role or ClusterRole and its binding to the controller's ServiceAccount in `home`."""
    subject = {"kind": "ServiceAccount", "name": NAME, "namespace": home}
    return [
        {
            "apiVersion": f"{_RBAC}/v1",
            "kind": kind,
            "metadata": _meta(name, namespace),
            "rules": rules,
        },
        {
            "apiVersion": f"{_RBAC}/v1",
            "kind": f"{kind}Binding",
            "metadata": _meta(name, namespace),
            "roleRef": {"apiGroup": _RBAC, "kind": kind, "name": name},
            "subjects": [subject],
        },
    ]


def rbac(kinds: Sequence[JobKind[Any]], namespace: str | None = None) -> list[Object]:
    """What the controller may do, and nothing more: `grants(kinds)`, and its Lease.

    Without `namespace`, the cluster-wide install: a ClusterRole for jobs in every namespace,
    bound to the ServiceAccount in `jobcore-system`, and that Namespace, as `rbac/` is applied
    first. With `namespace`, the install of a controller that watches that namespace only
    (`run --namespace`): a Role there, and no Namespace object, since the tenant's namespace
    exists already. Either way the Lease's rights are a Role in the controller's namespace.
    """
    home = namespace or NAMESPACE
    role = "Role" if namespace else "ClusterRole"
    objects: list[Object] = []
    if namespace is None:
        objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(home, None)})
    return [
        *objects,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, home)},
        *_role_and_binding(role, NAME, namespace, _rules(grants(kinds)), home),
        *_role_and_binding("Role", f"{NAME}-leader-election", home, _lease_rules(), home),
    ]


def deployment(namespace: str | None = None, image: str = IMAGE) -> list[Object]:
    """The controller: two replicas with leader election and probes; `/metrics` on localhost.
    `network_policy()` goes with it.

    With `namespace`, it runs there and watches that namespace only. Its namespace comes with
    the RBAC objects, which are applied first. Metrics stay on the pod's loopback (the
    default of `--metrics-bind-address`) unless `metrics_patch()` exposes them.
    """
    home = namespace or NAMESPACE
    probe = {"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 10}
    container = {
        "name": "controller",
        "image": image,
        "args": [
            "--log-format",
            "json",
            "run",
            *(["--namespace", namespace] if namespace else []),
            "--leader-elect",
            "--leader-election-namespace",
            home,
            "--leader-election-id",
            NAME,
        ],
        # The kubelet probes the pod's IP: the probe server listens on every interface, and
        # `network_policy()` admits no pod to it.
        "ports": [{"name": "health", "containerPort": HEALTH_PORT}],
        "livenessProbe": {**probe, "initialDelaySeconds": 10},
        "readinessProbe": {**probe, "httpGet": {"path": "/readyz", "port": "health"}},
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "512Mi"},
        },
        "securityContext": restricted_container(),
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
            "metadata": _meta(NAME, home),
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
                        "securityContext": restricted_pod(),
                        "affinity": {
                            "podAntiAffinity": {
                                "preferredDuringSchedulingIgnoredDuringExecution": [spread]
                            }
                        },
                        "containers": [container],
                    },
                },
            },
        }
    ]


def metrics_patch() -> list[dict[str, Any]]:
    """A JSON patch (kustomize's `patchesJson6902`) that serves `/metrics` on the pod's IP,
    to be scraped, with `metrics_exposure()` in front and `network_policy()` admitting only
    Prometheus."""
    container = "/spec/template/spec/containers/0"
    return [
        {
            "op": "add",
            "path": f"{container}/args/-",
            "value": f"--metrics-bind-address=:{METRICS_PORT}",
        },
        {
            "op": "add",
            "path": f"{container}/ports/-",
            "value": {"name": "metrics", "containerPort": METRICS_PORT},
        },
    ]


def metrics_exposure(namespace: str | None = None) -> list[Object]:
    """For exposed metrics: a Service, for a ServiceMonitor. `network_policy()` admits
    Prometheus to the port."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(f"{NAME}-metrics", namespace or NAMESPACE),
            "spec": {
                "selector": dict(_LABELS),
                "ports": [{"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics"}],
            },
        }
    ]


def network_policy(namespace: str | None = None) -> list[Object]:
    """Ingress to the controller's pods only from where it must come: its metrics port from
    the Prometheus pods of the namespace `monitoring` (labelled as the kube-prometheus-stack
    labels them; edit the selectors to match yours), and nothing else from any pod.

    The probe port needs no rule: a NetworkPolicy cannot block a pod's own node, whose kubelet
    sends the probes. The metrics port is reachable only once `metrics_patch()` serves it on
    the pod's IP.
    """
    prometheus = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
    }
    return [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta(NAME, namespace or NAMESPACE),
            "spec": {
                "podSelector": {"matchLabels": dict(_LABELS)},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {"from": [prometheus], "ports": [{"protocol": "TCP", "port": METRICS_PORT}]}
                ],
            },
        }
    ]


def disruption_budget(namespace: str | None = None) -> list[Object]:
    """At most one of the two replicas evicted at a time: a standby is always there to lead.

    `policy/v1`, served from Kubernetes 1.21 on; 1.20 serves only `policy/v1beta1`, which 1.25
    removed. No one apiVersion serves both, so `write_manifests` keeps it out of the install.
    """
    return [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta(NAME, namespace or NAMESPACE),
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


def _dump(path: Path, documents: Sequence[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def write_manifests(
    kinds: Sequence[JobKind[Any]], output: str | Path, namespace: str | None = None
) -> list[Path]:
    """Write a kustomize layout under `output`: `crds/`, `rbac/`, `deploy/` (the Deployment
    and its NetworkPolicy) and a `kustomization.yaml` installing them (`kubectl apply -k`),
    and one for the job samples found in `samples/` (kept by hand).

    The install holds only APIs that every Kubernetes from 1.20 on serves, so `apply -k`
    works on all of them. Not installed: `deploy/pdb.yaml`, the PodDisruptionBudget, applied
    apart from 1.21 on (see `disruption_budget`), and `deploy/metrics.yaml` and
    `deploy/metrics-patch.yaml`, which expose `/metrics`, and `kueue/`, what Kueue's controller
    needs on the kinds for MultiKueue (see `kueue_rbac`), and `dashboard/`, the dashboard's
    optional install (`controllers.dashboard.manifests`). With `namespace` (an install
    limited to it, see `rbac`), `kustomization.yaml` leaves out `crds/` too: CRDs are
    cluster-scoped, for a cluster admin to install.
    """
    root = Path(output)
    crds = write_crds(kinds, root / "crds")
    installed = [
        _dump(root / "rbac" / "rbac.yaml", rbac(kinds, namespace)),
        _dump(root / "deploy" / "controller.yaml", deployment(namespace)),
        _dump(root / "deploy" / "network-policy.yaml", network_policy(namespace)),
    ]
    apart = [
        _dump(root / "deploy" / "pdb.yaml", disruption_budget(namespace)),
        _dump(root / "deploy" / "metrics.yaml", metrics_exposure(namespace)),
        _dump(root / "deploy" / "metrics-patch.yaml", [metrics_patch()]),
    ]
    if namespace is None:  # Kueue's rights for MultiKueue, applied apart: `apply -k kueue`
        kueue = _dump(root / "kueue" / "rbac.yaml", kueue_rbac(kinds))
        apart += [
            kueue,
            _dump(root / "kueue" / "kustomization.yaml", [_kustomization(["rbac.yaml"])]),
        ]
        dashboard = dashboard_files(kinds, NAMESPACE, IMAGE)
        dashboard["kustomization.yaml"] = [_kustomization(sorted(dashboard))]
        apart += [_dump(root / "dashboard" / name, docs) for name, docs in dashboard.items()]
    applied = installed if namespace else [*crds, *installed]
    names = sorted(str(path.relative_to(root)) for path in applied)
    written = [
        *crds,
        *installed,
        *apart,
        _dump(root / "kustomization.yaml", [_kustomization(names)]),
    ]
    samples = sorted(path.name for path in (root / "samples").glob("*.yaml"))
    if samples:
        samples = [name for name in samples if name != "kustomization.yaml"]
        written.append(_dump(root / "samples" / "kustomization.yaml", [_kustomization(samples)]))
    return written
