"""Generated manifests and kind discovery: no drift, least privilege, loud or skipped failures."""

from __future__ import annotations

from importlib import metadata
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers import kinds as kinds_module
from controllers.kinds import ENTRY_POINT_GROUP, KindLoadError, installed_kinds
from controllers.manifests import deployment, disruption_budget, rbac, write_manifests
from jobcore import crd_for
from jobkinds.mpijob import MPIJobKind

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "run `jobcore manifests --kinds colossalaijob,horovodjob,mpijob`"


def test_committed_crds_match_the_models(tmp_path: Path) -> None:
    """`jobcore manifests` output is committed; this fails when the models drift from it."""
    bundled = installed_kinds(["colossalaijob", "horovodjob", "mpijob"])  # not plugins
    (tmp_path / "samples").mkdir()
    for sample in (ROOT / "manifests" / "samples").glob("*.yaml"):
        if sample.name != "kustomization.yaml":
            (tmp_path / "samples" / sample.name).write_text(sample.read_text())
    generated = write_manifests([k.kind for k in bundled], tmp_path)
    for path in generated:
        committed = ROOT / "manifests" / path.relative_to(tmp_path)
        assert committed.exists(), f"{REGENERATE}: {committed} is missing"
        assert committed.read_text() == path.read_text(), f"{REGENERATE}: {committed}"


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_rbac_is_least_privilege() -> None:
    objects = rbac([MPIJobKind()])
    assert "*" not in _strings(objects)
    cluster_role = next(o for o in objects if o["kind"] == "ClusterRole")
    rules = {
        (tuple(r["apiGroups"]), tuple(r["resources"])): r["verbs"] for r in cluster_role["rules"]
    }
    assert rules[(("batch.tensorstack.dev",), ("mpijobs",))] == ["get", "list", "watch", "delete"]
    assert rules[(("batch.tensorstack.dev",), ("mpijobs/status",))] == ["get", "patch", "update"]
    assert "create" in rules[(("",), ("configmaps", "pods", "secrets", "services"))]
    assert rules[(("",), ("events",))] == ["create", "patch"]
    assert rules[(("",), ("configmaps",))] == ["patch"]
    assert rules[(("batch.tensorstack.dev",), ("mpijobs/finalizers",))] == ["update"]
    assert objects[0]["kind"] == "Namespace", "rbac/ is applied first and brings the namespace"
    assert not any("leases" in r["resources"] for r in cluster_role["rules"])
    role = next(o for o in objects if o["kind"] == "Role")
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update"],
        }
    ]


def test_deployment_runs_two_leader_elected_replicas_with_probes() -> None:
    deploy, metrics = deployment()
    spec = deploy["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert deploy["spec"]["replicas"] == 2
    assert "--leader-elect" in container["args"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "metrics": 8080,
        "health": 8081,
    }
    assert container["resources"]["requests"]
    assert container["image"] == f"jobcore:{metadata.version('jobcore')}"  # never :latest
    assert metrics["kind"] == "Service"
    assert metrics["spec"]["ports"][0]["targetPort"] == "metrics"


def test_the_controller_pod_meets_pod_security_restricted() -> None:
    """What the "restricted" Pod Security Standard asks of a pod, field by field."""
    deploy, _ = deployment()
    spec = deploy["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] != 0
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert not any(key in spec for key in ("hostNetwork", "hostPID", "hostIPC"))
    assert all("hostPath" not in volume for volume in spec.get("volumes", ()))


def test_a_disruption_never_takes_both_replicas() -> None:
    (budget,) = disruption_budget()
    (deploy, _) = deployment()
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
    kinds = {k.kind.resource.kind: k.kind for k in installed_kinds()}
    samples = ROOT / "manifests" / "samples"
    listed = yaml.safe_load((samples / "kustomization.yaml").read_text())["resources"]
    paths = sorted(p for p in samples.glob("*.yaml") if p.name != "kustomization.yaml")
    assert listed == [p.name for p in paths], f"{REGENERATE}: samples/kustomization.yaml"
    for path in paths:
        job = yaml.safe_load(path.read_text())
        assert job["kind"] in kinds, path
        kinds[job["kind"]].spec_model.model_validate(job["spec"])
