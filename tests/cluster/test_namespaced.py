"""The namespaced install on a real kubelet: `jobcore manifests --namespace NS`, its CRDs applied
by the cluster admin, `kubectl apply -k`, the controller's two replicas Ready in NS with its
Lease there, and a job in NS run by it with that namespace's Role and nothing more."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controllers.manifests import CONTROLLER_SELECTOR
from controllers.manifests import NAME
from controllers.manifests import NAMESPACE
from controllers.sandbox.realjobs import MPIJOBS
from jobcore import Client
from tests.cluster import mpiruns
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import run_in_cluster
from tests.support import installs
from tests.support.mpioutput import on_two_workers
from tests.support.mpioutput import ranks

pytestmark = pytest.mark.integration


def rollout(cluster: Cluster, namespace: str) -> None:
    args = ("rollout", "status", "-n", namespace, f"deployment/{NAME}", "--timeout=180s")
    cluster.kubectl(*args, timeout=200)


@pytest.fixture
def cluster_wide_controller_stopped(cluster: Cluster) -> Iterator[None]:
    """The cluster-wide install scaled to none for the test (it would reconcile NS's jobs too),
    and back to its two replicas after."""
    cluster.kubectl("scale", "-n", NAMESPACE, f"deployment/{NAME}", "--replicas=0")
    cluster.kubectl(
        "wait",
        "--for=delete",
        "pod",
        "-n",
        NAMESPACE,
        "-l",
        CONTROLLER_SELECTOR,
        "--timeout=90s",
        timeout=100,  # kubectl's own 90 s, not the 60 s a kubectl call is given by default
    )
    try:
        yield
    finally:
        cluster.kubectl("scale", "-n", NAMESPACE, f"deployment/{NAME}", "--replicas=2")
        rollout(cluster, NAMESPACE)


async def test_a_namespaced_install_runs_the_jobs_of_its_namespace(
    cluster: Cluster,
    cluster_client: Client,
    cluster_namespace: str,
    cluster_wide_controller_stopped: None,
    tmp_path: Path,
) -> None:
    install = tmp_path / "install"
    await installs.namespaced_install(cluster.kubeconfig, cluster_namespace, install)
    cluster.kubectl("apply", "-k", str(install))
    rollout(cluster, cluster_namespace)
    pods = cluster.json("pods", "-n", cluster_namespace, "-l", CONTROLLER_SELECTOR)["items"]
    assert len(pods) == 2, [pod["metadata"]["name"] for pod in pods]
    lease = cluster.json("lease", "-n", cluster_namespace, NAME)
    leader = lease["spec"]["holderIdentity"].partition("_")[0]
    assert leader in {pod["metadata"]["name"] for pod in pods}

    job = mpiruns.mpi_job("openmpi", tmp_path, name="ns", namespace=cluster_namespace)
    status, log = await run_in_cluster(
        cluster, cluster_client, MPIJOBS, job, tmp_path, container="mpi-launcher"
    )
    assert status["phase"] == "Succeeded", log
    assert ranks(log) == on_two_workers("ns"), log
