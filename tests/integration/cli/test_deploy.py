"""The shipped manifests as an operator installs them: `kubectl apply -k`, then the controller
running as its ServiceAccount (not admin), reconciling every sample job.

Proves the RBAC is enough (no request is refused) and no more than needed (the API server's
own authorizer refuses what the controller has no business doing).
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.manifests import NAME
from controllers.manifests import NAMESPACE
from jobcore import NAMESPACES
from jobcore import AlreadyExistsError
from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import T9kScheduler
from jobcore.jobs import hooks_of
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import job_status
from jobcore.testing import schemaless_crd
from tests.support import installs
from tests.support.jobdocs import kind_of

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
MANIFESTS = ROOT / "manifests"
SAMPLES = [
    yaml.safe_load(path.read_text())
    for path in sorted((MANIFESTS / "samples").glob("*.yaml"))
    if path.name != "kustomization.yaml"
]
SERVICE_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:{NAME}"


KUEUE_CONTROLLER = "system:serviceaccount:kueue-system:kueue-controller-manager"


async def can_i(kubeconfig: str, who: str, verb: str, resource: str) -> str:
    """The API server's authorizer's answer ("yes", "no") on whether `who` may."""
    can = installs.kubectl(kubeconfig, "auth", "can-i", verb, *resource.split(), "--as", who)
    _, answer, _ = await installs.run(can)
    return answer.strip()


def resource_of(job: Object) -> Resource:
    group, version = job["apiVersion"].split("/")
    return Resource(group, version, job["kind"], job["kind"].lower() + "s")


def phase_of(job: Object, status: dict[str, Any]) -> str | None:
    """The job's phase, read through its kind's status part (Kubeflow's status has none)."""
    phase: str | None = hooks_of(kind_of(job)).status_part.read(status).phase
    return phase


async def test_kubectl_apply_k_installs_a_controller_whose_rbac_is_enough_and_least(
    client: Client,
    namespace: str,
    kubeconfig_path: str,
    service_account_kubeconfig: installs.AccountKubeconfig,
    control_plane: Any,
) -> None:
    await control_plane.start_controller_manager()  # Kubeflow's MPIJob launches a batch Job
    code, out, err = await installs.run(
        installs.kubectl(kubeconfig_path, "apply", "-k", str(MANIFESTS))
    )
    assert (code, installs.complaints(err)) == (0, []), err
    for applied in (
        "namespace/jobcore-system",
        "customresourcedefinition.apiextensions.k8s.io/mpijobs.batch.tensorstack.dev",
        f"serviceaccount/{NAME}",
        f"clusterrole.rbac.authorization.k8s.io/{NAME}",
        f"clusterrolebinding.rbac.authorization.k8s.io/{NAME}",
        f"deployment.apps/{NAME}",
        f"networkpolicy.networking.k8s.io/{NAME}",
    ):
        assert applied in out, out
    assert f"service/{NAME}-metrics" not in out, "metrics are exposed only on demand"

    await install_crd(client, schemaless_crd(T9kScheduler.resource))  # for the T9k sample
    # The API server's authorizer: what the ServiceAccount may and may not do.
    for verb, resource, allowed in (
        ("list", "mpijobs.batch.tensorstack.dev", "yes"),
        ("patch", "mpijobs.batch.tensorstack.dev --subresource=status", "yes"),
        ("patch", "mpijobs.kubeflow.org --subresource=status", "yes"),
        ("create", "jobs.batch", "yes"),
        ("delete", "jobs.batch", "yes"),
        ("update", "jobs.batch", "no"),
        ("update", "mpijobs.batch.tensorstack.dev", "no"),
        ("create", "pods", "yes"),
        ("delete", "pods", "yes"),
        ("patch", "configmaps", "yes"),
        ("patch", "podgroups.scheduler.tensorstack.dev", "yes"),
        ("delete", "secrets", "no"),
        ("delete", "configmaps", "no"),
        ("delete", "services", "no"),
        ("patch", "secrets", "no"),
        ("create", "mpijobs.batch.tensorstack.dev", "no"),
        ("update", "pods", "no"),
        ("create", "pods --subresource=exec", "no"),
        ("get", "nodes", "no"),
        ("create", "deployments.apps", "no"),
        ("create", "clusterroles.rbac.authorization.k8s.io", "no"),
        ("update", "leases.coordination.k8s.io -n kube-system", "no"),
        ("update", f"leases.coordination.k8s.io/other -n {NAMESPACE}", "no"),
        ("update", f"leases.coordination.k8s.io/{NAME} -n {NAMESPACE}", "yes"),
    ):
        assert await can_i(kubeconfig_path, SERVICE_ACCOUNT, verb, resource) == allowed, resource

    # The optional manifest: what Kueue's controller needs on jobcore's kinds for MultiKueue.
    kueue = installs.kubectl(kubeconfig_path, "apply", "-k", str(MANIFESTS / "kueue"))
    code, out, err = await installs.run(kueue)
    assert (code, installs.complaints(err)) == (0, []), err
    for verb, resource, allowed in (
        ("create", "horovodjobs.batch.tensorstack.dev", "yes"),
        ("watch", "colossalaijobs.batch.tensorstack.dev", "yes"),
        ("patch", "mpijobs.batch.tensorstack.dev --subresource=status", "yes"),
        ("create", "mpijobs.kubeflow.org", "no"),  # Kueue's own integration, its own rights
        ("create", "pods", "no"),
    ):
        assert await can_i(kubeconfig_path, KUEUE_CONTROLLER, verb, resource) == allowed, resource

    sa_kubeconfig = await service_account_kubeconfig(NAMESPACE, NAME)
    node = SimulatedNode(client, name=f"node-{namespace}"[:63], namespace=namespace)
    node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.5)
    args = installs.deployment_args(MANIFESTS)
    async with installs.controller_process(sa_kubeconfig, args) as log, background(node.run()):
        samples = str(MANIFESTS / "samples")
        code, out, err = await installs.run(
            installs.kubectl(kubeconfig_path, "apply", "-n", namespace, "-k", samples)
        )
        assert code == 0, err
        jobs = SAMPLES

        async def all_reconciled() -> bool:
            for job in jobs:
                status: dict[str, Any] = await job_status(
                    client, resource_of(job), namespace, job["metadata"]["name"]
                )
                if phase_of(job, status) not in ("Running", "Succeeded", "Paused"):
                    return False
            return True

        try:
            await eventually(all_reconciled, timeout=60)
        except TimeoutError:
            phases = {
                job["metadata"]["name"]: phase_of(
                    job,
                    await job_status(client, resource_of(job), namespace, job["metadata"]["name"]),
                )
                for job in jobs
            }
            raise AssertionError(f"not reconciled: {phases}; log: {log[-5:]}") from None
    assert not installs.forbidden(log), installs.forbidden(log)


async def test_metrics_are_exposed_by_a_patch_and_admitted_from_prometheus_only(
    client: Client, kubeconfig_path: str, tmp_path: Path
) -> None:
    """The documented way to expose `/metrics`: the two files the default install leaves
    out, added to its kustomization, pass the API server's validation; the installed
    NetworkPolicy admits Prometheus to the port."""
    # A server-side dry run creates no namespace for the objects in it: the install's, made
    # here unless the other test of this file made it first.
    with contextlib.suppress(AlreadyExistsError):
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        await client.create(NAMESPACES, namespace)
    shutil.copytree(MANIFESTS, tmp_path / "manifests")
    kustomization = tmp_path / "manifests" / "kustomization.yaml"
    layout = yaml.safe_load(kustomization.read_text())
    layout["resources"].append("deploy/metrics.yaml")
    target = {"group": "apps", "version": "v1", "kind": "Deployment", "name": NAME}
    layout["patchesJson6902"] = [{"target": target, "path": "deploy/metrics-patch.yaml"}]
    kustomization.write_text(yaml.safe_dump(layout))

    code, out, err = await installs.run(
        installs.kubectl(kubeconfig_path, "kustomize", str(kustomization.parent))
    )
    assert code == 0, err
    built = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(out)}
    (container,) = built["Deployment", NAME]["spec"]["template"]["spec"]["containers"]
    assert container["args"][-1] == "--metrics-bind-address=:8080"
    assert {"name": "metrics", "containerPort": 8080} in container["ports"]
    policy = built["NetworkPolicy", NAME]["spec"]
    (rule,) = policy["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8080}]
    assert rule["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"
    }
    assert built["Service", f"{NAME}-metrics"]["spec"]["ports"][0]["targetPort"] == "metrics"

    code, out, err = await installs.run(
        installs.kubectl(
            kubeconfig_path, "apply", "--dry-run=server", "-k", str(kustomization.parent)
        )
    )
    assert (code, installs.complaints(err)) == (0, []), err
    assert f"networkpolicy.networking.k8s.io/{NAME}" in out, out
