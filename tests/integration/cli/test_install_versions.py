"""The install commands of docs/deployment.md, per Kubernetes version, on the session's API
server (envtest's is 1.20): `kubectl apply -k` of the cluster-wide and the namespaced install
exits 0 with nothing on stderr and creates every object; the PodDisruptionBudget, a file apart,
is applied where the server serves `policy/v1` (1.21 on) and refused where it does not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from controllers.manifests import NAME
from jobcore import Client
from tests.support import installs

pytestmark = pytest.mark.integration

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests"
RBAC = "rbac.authorization.k8s.io"
CLUSTER_WIDE = {
    "namespace/jobcore-system",
    *(
        f"customresourcedefinition.apiextensions.k8s.io/{crd}"
        for crd in (
            "colossalaijobs.batch.tensorstack.dev",
            "horovodjobs.batch.tensorstack.dev",
            "mpijobs.batch.tensorstack.dev",
            "mpijobs.kubeflow.org",
        )
    ),
    f"serviceaccount/{NAME}",
    f"clusterrole.{RBAC}/{NAME}",
    f"clusterrolebinding.{RBAC}/{NAME}",
    f"role.{RBAC}/{NAME}-leader-election",
    f"rolebinding.{RBAC}/{NAME}-leader-election",
    f"deployment.apps/{NAME}",
    f"networkpolicy.networking.k8s.io/{NAME}",
}
NAMESPACED = {
    f"serviceaccount/{NAME}",
    f"role.{RBAC}/{NAME}",
    f"rolebinding.{RBAC}/{NAME}",
    f"role.{RBAC}/{NAME}-leader-election",
    f"rolebinding.{RBAC}/{NAME}-leader-election",
    f"deployment.apps/{NAME}",
    f"networkpolicy.networking.k8s.io/{NAME}",
}


async def serves_policy_v1(client: Client) -> bool:
    """Whether the API server serves `policy/v1` (Kubernetes 1.21 on)."""
    group = await client.request("GET", "/apis/policy")
    return any(version["version"] == "v1" for version in group["versions"])


async def apply_cleanly(kubeconfig: str, install: Path) -> set[str]:
    """`kubectl apply -k install`, which must exit 0 with nothing on stderr; what it applied,
    each as `kubectl get -o name` names it, checked to exist there now."""
    code, out, err = await installs.run(installs.kubectl(kubeconfig, "apply", "-k", str(install)))
    assert (code, installs.complaints(err)) == (0, []), f"kubectl exited {code}: {err}"
    applied = {line.split()[0] for line in out.splitlines()}
    code, out, err = await installs.run(
        installs.kubectl(kubeconfig, "get", "-k", str(install), "-o", "name")
    )
    assert code == 0, err
    assert set(out.split()) == applied
    return applied


async def assert_budget_as_documented(client: Client, kubeconfig: str, install: Path) -> None:
    """`kubectl apply -f deploy/pdb.yaml`, after `apply -k`: the budget from 1.21 on;
    refused on 1.20, where the install goes without it."""
    pdb = str(install / "deploy" / "pdb.yaml")
    code, out, err = await installs.run(installs.kubectl(kubeconfig, "apply", "-f", pdb))
    if await serves_policy_v1(client):
        assert (code, installs.complaints(err)) == (0, []), err
        assert out.split()[0] == f"poddisruptionbudget.policy/{NAME}", out
    else:
        assert code == 1, out
        assert 'no matches for kind "PodDisruptionBudget" in version "policy/v1"' in err, err


async def test_the_cluster_wide_install_applies_cleanly(
    client: Client, kubeconfig_path: str, tmp_path: Path
) -> None:
    install = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, install)
    assert await apply_cleanly(kubeconfig_path, install) == CLUSTER_WIDE
    await assert_budget_as_documented(client, kubeconfig_path, install)


async def test_the_namespaced_install_applies_cleanly(
    client: Client, namespace: str, kubeconfig_path: str, tmp_path: Path
) -> None:
    install = tmp_path / "install"
    await installs.namespaced_install(kubeconfig_path, namespace, install)
    assert await apply_cleanly(kubeconfig_path, install) == NAMESPACED
    await assert_budget_as_documented(client, kubeconfig_path, install)
