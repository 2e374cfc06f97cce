"""The shipped manifests as an operator installs them: `kubectl apply -k`, then the controller
running as its ServiceAccount (not admin), reconciling every sample job.

Proves the RBAC is enough (no request is refused) and no more than needed (the API server's
own authorizer refuses what the controller has no business doing).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.manifests import NAME, NAMESPACE
from jobcore import REPLICA_TYPE_LABEL, Client, Object, Resource, T9kScheduler
from jobcore.testing import (
    SimulatedNode,
    background,
    eventually,
    install_crd,
    job_status,
    schemaless_crd,
)
from tests.commands import start_jobcore

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
SAMPLES = [
    yaml.safe_load(path.read_text())
    for path in sorted((MANIFESTS / "samples").glob("*.yaml"))
    if path.name != "kustomization.yaml"
]
SERVICE_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:{NAME}"
TOKEN_REQUEST = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}


def kubectl(kubeconfig: str, *args: str) -> list[str]:
    assets = os.environ.get("KUBEBUILDER_ASSETS", "")
    return [str(Path(assets) / "kubectl"), "--kubeconfig", kubeconfig, *args]


async def run(argv: list[str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def with_token(admin: str, token: str, path: Path) -> str:
    """A copy of the admin kubeconfig that authenticates with `token` instead."""
    config = yaml.safe_load(Path(admin).read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    return str(path)


async def service_account_token(client: Client) -> str:
    """A token of the controller's ServiceAccount, from the TokenRequest API."""
    path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{NAME}/token"
    answer = await client.request("POST", path, body=TOKEN_REQUEST)
    token: str = answer["status"]["token"]
    return token


@contextlib.asynccontextmanager
async def controller_process(kubeconfig: str) -> AsyncIterator[list[str]]:
    """`jobcore run` as the Deployment runs it (leader election, all namespaces); its log."""
    process = await start_jobcore(
        "--log-format",
        "json",
        "run",
        "--kubeconfig",
        kubeconfig,
        "--kinds",
        "mpijob,colossalaijob,horovodjob",
        "--leader-elect",
        "--leader-election-namespace",
        NAMESPACE,
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
    )
    log: list[str] = []

    async def collect() -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            log.append(line.decode())

    reader = asyncio.create_task(collect())
    try:
        yield log
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), timeout=40)
        await reader


def resource_of(job: Object) -> Resource:
    group, version = job["apiVersion"].split("/")
    return Resource(group, version, job["kind"], job["kind"].lower() + "s")


async def test_kubectl_apply_k_installs_a_controller_whose_rbac_is_enough_and_least(
    client: Client, namespace: str, kubeconfig_path: str, tmp_path: Path
) -> None:
    code, out, err = await run(kubectl(kubeconfig_path, "apply", "-k", str(MANIFESTS)))
    # Everything applies but the PodDisruptionBudget: policy/v1 is served from Kubernetes 1.21
    # on, and this API server is 1.20.
    refused = [line for line in err.splitlines() if line.startswith("error")]
    assert all("PodDisruptionBudget" in line for line in refused), err
    assert code in (0, 1), err
    for applied in (
        "namespace/jobcore-system",
        "customresourcedefinition.apiextensions.k8s.io/mpijobs.batch.tensorstack.dev",
        f"serviceaccount/{NAME}",
        f"clusterrole.rbac.authorization.k8s.io/{NAME}",
        f"clusterrolebinding.rbac.authorization.k8s.io/{NAME}",
        f"deployment.apps/{NAME}",
        f"service/{NAME}-metrics",
    ):
        assert applied in out, out

    await install_crd(client, schemaless_crd(T9kScheduler.resource))  # for the T9k sample
    # The API server's authorizer: what the ServiceAccount may and may not do.
    for verb, resource, allowed in (
        ("list", "mpijobs.batch.tensorstack.dev", "yes"),
        ("patch", "mpijobs.batch.tensorstack.dev --subresource=status", "yes"),
        ("update", "mpijobs.batch.tensorstack.dev", "no"),
        ("create", "pods", "yes"),
        ("create", "podgroups.scheduler.tensorstack.dev", "yes"),
        ("create", "mpijobs.batch.tensorstack.dev", "no"),
        ("update", "pods", "no"),
        ("create", "pods --subresource=exec", "no"),
        ("get", "nodes", "no"),
        ("create", "deployments.apps", "no"),
        ("create", "clusterroles.rbac.authorization.k8s.io", "no"),
    ):
        _, answer, _ = await run(
            kubectl(
                kubeconfig_path, "auth", "can-i", verb, *resource.split(), "--as", SERVICE_ACCOUNT
            )
        )
        assert answer.strip() == allowed, f"{verb} {resource}: {answer.strip()}"

    token = await service_account_token(client)
    sa_kubeconfig = with_token(kubeconfig_path, token, tmp_path / "sa.kubeconfig")
    node = SimulatedNode(client, name=f"node-{namespace}"[:63], namespace=namespace)
    node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.5)
    async with controller_process(sa_kubeconfig) as log, background(node.run()):
        samples = str(MANIFESTS / "samples")
        code, out, err = await run(
            kubectl(kubeconfig_path, "apply", "-n", namespace, "-k", samples)
        )
        assert code == 0, err
        jobs = SAMPLES

        async def all_reconciled() -> bool:
            for job in jobs:
                status: dict[str, Any] = await job_status(
                    client, resource_of(job), namespace, job["metadata"]["name"]
                )
                if status.get("phase") not in ("Running", "Succeeded", "Paused"):
                    return False
            return True

        try:
            await eventually(all_reconciled, timeout=60)
        except TimeoutError:
            phases = {
                job["metadata"]["name"]: (
                    await job_status(client, resource_of(job), namespace, job["metadata"]["name"])
                ).get("phase")
                for job in jobs
            }
            raise AssertionError(f"not reconciled: {phases}; log: {log[-20:]}") from None
    # Other tests' jobs in namespaces being deleted are refused too ("being terminated"):
    # that is the namespace's doing, not RBAC's.
    refused = [
        line for line in log if "forbidden" in line.lower() and "being terminated" not in line
    ]
    assert not refused, refused
