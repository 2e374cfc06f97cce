"""Generated manifests and kind discovery: no drift, least privilege, loud or skipped failures."""

from __future__ import annotations

from importlib import metadata
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers import kinds as kinds_module
from controllers.apidocs import REGENERATE
from controllers.cli import main
from controllers.kinds import ENTRY_POINT_GROUP
from controllers.kinds import KindLoadError
from controllers.kinds import installed_kinds
from controllers.manifests import NAME
from controllers.manifests import NAMESPACE
from controllers.manifests import deployment
from controllers.manifests import disruption_budget
from controllers.manifests import metrics_exposure
from controllers.manifests import metrics_patch
from controllers.manifests import network_policy
from controllers.manifests import rbac
from jobcore.jobs import crd_for
from jobkinds.mpijob import MPIJobKind

ROOT = Path(__file__).resolve().parents[3]


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_rbac_grants_exactly_the_verbs_the_controller_uses() -> None:
    objects = rbac([MPIJobKind()])
    assert "*" not in _strings(objects)
    assert [o["kind"] for o in objects] == [
        "Namespace",  # rbac/ is applied first and brings the namespace
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    ]
    cluster_role = objects[2]
    rules = {
        (group, resource): rule["verbs"]
        for rule in cluster_role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    watched = ["get", "list", "watch", "create"]
    assert rules == {
        ("batch.tensorstack.dev", "mpijobs"): ["list", "watch", "delete"],
        ("batch.tensorstack.dev", "mpijobs/status"): ["patch"],
        ("batch.tensorstack.dev", "mpijobs/finalizers"): ["update"],
        ("", "pods"): [*watched, "delete"],
        ("", "configmaps"): [*watched, "patch"],
        ("", "secrets"): watched,
        ("", "services"): watched,
        ("", "events"): ["create", "patch"],
        ("scheduler.tensorstack.dev", "podgroups"): ["get", "create", "patch"],
        ("scheduling.volcano.sh", "podgroups"): ["get", "create", "patch"],
        ("scheduling.x-k8s.io", "podgroups"): ["get", "create", "patch"],
        ("kueue.x-k8s.io", "workloads"): ["list", "watch", "create", "patch", "delete"],
        ("kueue.x-k8s.io", "workloads/status"): ["patch"],
        ("kueue.x-k8s.io", "resourceflavors"): ["get"],
        ("kueue.x-k8s.io", "workloadpriorityclasses"): ["get"],
        ("scheduling.k8s.io", "priorityclasses"): ["get", "list"],
        ("kueue.x-k8s.io", "localqueues"): ["list", "watch"],
        ("", "namespaces"): ["list", "watch"],
    }
    assert all("resourceNames" not in rule for rule in cluster_role["rules"])
    assert objects[3]["roleRef"]["name"] == cluster_role["metadata"]["name"]
    assert objects[3]["subjects"] == [
        {"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}
    ]


def test_the_lease_is_granted_in_the_controllers_namespace_and_by_name() -> None:
    role = rbac([MPIJobKind()])[4]
    assert role["metadata"]["namespace"] == NAMESPACE
    lease = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}
    assert role["rules"] == [
        {**lease, "verbs": ["create"]},  # RBAC cannot limit create to a name
        {**lease, "resourceNames": [NAME], "verbs": ["get", "update"]},
    ]
    (container,) = deployment()[0]["spec"]["template"]["spec"]["containers"]
    assert container["args"][-2:] == ["--leader-election-id", NAME]


def test_a_namespaced_install_is_roles_in_that_namespace_only() -> None:
    cluster_wide = rbac([MPIJobKind()])
    objects = rbac([MPIJobKind()], "team-a")
    assert [o["kind"] for o in objects] == [
        "ServiceAccount",  # no Namespace: the team's exists already
        "Role",
        "RoleBinding",
        "Role",
        "RoleBinding",
    ]
    assert all(o["metadata"]["namespace"] == "team-a" for o in objects)
    assert objects[1]["rules"] == cluster_wide[2]["rules"]
    assert objects[3]["rules"] == cluster_wide[4]["rules"]
    assert objects[2]["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": NAME,
    }
    assert objects[2]["subjects"] == [
        {"kind": "ServiceAccount", "name": NAME, "namespace": "team-a"}
    ]

    (deploy,) = deployment("team-a")
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    assert deploy["metadata"]["namespace"] == "team-a"
    args = container["args"]
    assert args[args.index("--namespace") + 1] == "team-a"
    assert args[args.index("--leader-election-namespace") + 1] == "team-a"
    assert disruption_budget("team-a")[0]["metadata"]["namespace"] == "team-a"


def test_a_namespaced_install_leaves_the_crds_to_a_cluster_admin(tmp_path: Path) -> None:
    assert (
        main(["manifests", "--kinds", "mpijob", "--namespace", "team-a", "--output", str(tmp_path)])
        == 0
    )
    layout = yaml.safe_load((tmp_path / "kustomization.yaml").read_text())
    assert layout["resources"] == [
        "deploy/controller.yaml",
        "deploy/network-policy.yaml",
        "rbac/rbac.yaml",
    ]
    assert (tmp_path / "crds" / "batch.tensorstack.dev_mpijobs.yaml").exists()
    kinds = [o["kind"] for o in yaml.safe_load_all((tmp_path / "rbac" / "rbac.yaml").read_text())]
    assert "ClusterRole" not in kinds and "Namespace" not in kinds


SERVED_FROM_1_20_ON = {
    "v1",
    "apps/v1",
    "rbac.authorization.k8s.io/v1",
    "apiextensions.k8s.io/v1",
    "networking.k8s.io/v1",
}
"""API versions that Kubernetes 1.20 serves and no later release removes."""


@pytest.mark.parametrize("scope", [[], ["--namespace", "team-a"]], ids=["cluster", "namespace"])
def test_the_install_applies_on_every_kubernetes_from_1_20_and_the_budget_apart(
    tmp_path: Path, scope: list[str]
) -> None:
    """No one apiVersion of PodDisruptionBudget is served by 1.20 (`policy/v1beta1` only)
    and by 1.25 on (`policy/v1` only): `apply -k` installs none, `deploy/pdb.yaml` is for
    1.21 on."""
    assert main(["manifests", "--kinds", "mpijob", "--output", str(tmp_path), *scope]) == 0
    layout = yaml.safe_load((tmp_path / "kustomization.yaml").read_text())
    installed = [
        document
        for name in layout["resources"]
        for document in yaml.safe_load_all((tmp_path / name).read_text())
    ]
    assert {document["apiVersion"] for document in installed} <= SERVED_FROM_1_20_ON
    (budget,) = yaml.safe_load_all((tmp_path / "deploy" / "pdb.yaml").read_text())
    assert (budget["apiVersion"], budget["kind"]) == ("policy/v1", "PodDisruptionBudget")


def test_deployment_runs_two_leader_elected_replicas_with_probes() -> None:
    (deploy,) = deployment()
    spec = deploy["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert deploy["spec"]["replicas"] == 2
    assert "--leader-elect" in container["args"]
    assert "--namespace" not in container["args"]  # every namespace
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["ports"] == [{"name": "health", "containerPort": 8081}]
    assert container["resources"]["requests"]
    assert container["image"] == f"jobcore:{metadata.version('jobcore-k8s')}"  # never :latest


def test_metrics_listen_on_loopback_unless_exposed(capsys: pytest.CaptureFixture[str]) -> None:
    (deploy,) = deployment()
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    assert not any("metrics" in arg for arg in container["args"])  # the default holds
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "(default: 127.0.0.1:8080, loopback only;" in " ".join(capsys.readouterr().out.split())
    exposed = metrics_patch()
    assert [op["value"] for op in exposed] == [
        "--metrics-bind-address=:8080",
        {"name": "metrics", "containerPort": 8080},
    ]
    (service,) = metrics_exposure()
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"


def test_the_network_policy_admits_prometheus_to_the_metrics_port_and_no_pod_else() -> None:
    """The probe port needs no rule: a NetworkPolicy cannot block the pod's own node, whose
    kubelet probes it."""
    (deploy,) = deployment()
    (policy,) = network_policy()
    assert policy["metadata"]["namespace"] == NAMESPACE
    assert network_policy("team-a")[0]["metadata"]["namespace"] == "team-a"
    assert policy["spec"]["podSelector"] == deploy["spec"]["selector"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8080}]
    (source,) = rule["from"]
    assert source == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
    }


def test_the_controller_pod_meets_pod_security_restricted() -> None:
    """What the "restricted" Pod Security Standard asks of a pod, field by field."""
    (deploy,) = deployment()
    spec = deploy["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] != 0
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert not any(key in spec for key in ("hostNetwork", "hostPID", "hostIPC"))
    assert all("hostPath" not in volume for volume in spec.get("volumes", ()))


def test_the_pod_runs_as_the_images_user_and_group() -> None:
    """The Dockerfile's `USER uid:gid`: a pod that sets the uid alone runs in group 0."""
    (user,) = [
        line.split()[1]
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.startswith("USER ")
    ]
    (deploy,) = deployment()
    context = deploy["spec"]["template"]["spec"]["securityContext"]
    assert f"{context['runAsUser']}:{context['runAsGroup']}" == user


def test_a_disruption_never_takes_both_replicas() -> None:
    (budget,) = disruption_budget()
    (deploy,) = deployment()
    assert budget["spec"]["maxUnavailable"] == 1
    assert budget["spec"]["selector"]["matchLabels"] == deploy["spec"]["selector"]["matchLabels"]
    assert deploy["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 0}


def test_the_bundled_kind_is_found_through_its_entry_point() -> None:
    found = {k.name: k for k in installed_kinds()}
    assert isinstance(found["mpijob"].kind, MPIJobKind)
    assert crd_for(found["mpijob"].kind)["metadata"]["name"] == "mpijobs.batch.tensorstack.dev"


def _fake_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [
        EntryPoint("mpijob", "jobkinds.mpijob:MPIJobKind", ENTRY_POINT_GROUP),
        EntryPoint("broken", "no_such_module_anywhere:Kind", ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr(kinds_module, "entry_points", lambda group: entries)


def test_a_broken_discovered_kind_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(monkeypatch)
    assert [k.name for k in installed_kinds()] == ["mpijob"]


def test_a_broken_kind_asked_for_by_name_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(monkeypatch)
    with pytest.raises(KindLoadError, match="broken"):
        installed_kinds(["broken"])
    with pytest.raises(KindLoadError, match="unknown job kind"):
        installed_kinds(["nope"])


def test_samples_are_valid_yaml_jobs_of_an_installed_kind() -> None:
    kinds = {(k.kind.resource.api_version, k.kind.resource.kind): k.kind for k in installed_kinds()}
    samples = ROOT / "manifests" / "samples"
    listed = yaml.safe_load((samples / "kustomization.yaml").read_text())["resources"]
    paths = sorted(p for p in samples.glob("*.yaml") if p.name != "kustomization.yaml")
    assert listed == [p.name for p in paths], f"run `{REGENERATE}`: samples/kustomization.yaml"
    for path in paths:
        job = yaml.safe_load(path.read_text())
        kind = kinds.get((job["apiVersion"], job["kind"]))
        assert kind is not None, path
        kind.spec_model.model_validate(job["spec"])
