"""The dashboard's in-cluster install on a real kubelet: `kubectl apply -k manifests/dashboard`
runs the controller's image as `jobcore dashboard` under its read-only ServiceAccount, and
`kubectl port-forward` reaches its pages on the pod's loopback."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator

import aiohttp
import pytest

from controllers.dashboard.manifests import NAME
from controllers.manifests import NAMESPACE
from jobcore import Client
from jobcore.testing import eventually
from tests.cluster.conftest import ROOT
from tests.cluster.conftest import Cluster
from tests.support import installs
from tests.support.kindjobs import MPIJOB

pytestmark = pytest.mark.integration

INSTALL = ROOT / "manifests" / "dashboard"


@contextlib.asynccontextmanager
async def port_forward(cluster: Cluster) -> AsyncIterator[str]:
    """`kubectl port-forward deploy/jobcore-dashboard :8080`: the local address it forwards."""
    argv = installs.kubectl(
        cluster.kubeconfig, "-n", NAMESPACE, "port-forward", f"deploy/{NAME}", ":8080"
    )
    process = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        found = re.search(r"Forwarding from 127\.0\.0\.1:(\d+)", line)
        assert found, line
        yield f"http://127.0.0.1:{found.group(1)}"
    finally:
        process.terminate()
        await process.wait()


async def test_the_in_cluster_dashboard_is_reached_through_kubectl_port_forward(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str
) -> None:
    cluster.kubectl("apply", "-k", str(INSTALL))
    try:
        cluster.kubectl(
            "-n", NAMESPACE, "rollout", "status", f"deploy/{NAME}", "--timeout=120s", timeout=130
        )
        job = MPIJOB.job(cluster_namespace, "unpulled", replicas=1)  # its image pulls nowhere
        await cluster_client.create(MPIJOB.resource, job)
        async with port_forward(cluster) as url, aiohttp.ClientSession(url) as http:
            pages: list[str] = []

            async def shown() -> bool:
                path = f"/jobs/mpijob/{cluster_namespace}/unpulled"
                async with http.get(path) as response:
                    pages.append(await response.text())
                return "unpulled-worker-0" in pages[-1]

            await eventually(shown, timeout=60, interval=1)
            async with http.get(f"/?namespace={cluster_namespace}") as response:
                overview = await response.text()
        assert f'data-job="mpijob/{cluster_namespace}/unpulled"' in overview
        assert "kind: MPIJob" in pages[-1]  # read with the dashboard's own ServiceAccount
    finally:
        cluster.kubectl("delete", "-k", str(INSTALL), "--wait=false", check=False)
