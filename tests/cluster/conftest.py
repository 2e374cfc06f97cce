"""The real-cluster tier: the controller's image and manifests deployed as docs/deployment.md
installs them (`kubectl apply -k manifests`), on the kit's real cluster (kubelet, containerd,
runc, cluster DNS), and a client and a fresh namespace there for each test."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from controllers.manifests import CONTROLLER_SELECTOR
from controllers.manifests import NAME
from controllers.manifests import NAMESPACE
from controllers.sandbox import images
from controllers.sandbox.cluster import deploy
from controllers.sandbox.clusterjobs import with_programs_configmap
from jobcore import CONFIGMAPS
from jobcore import NAMESPACES
from jobcore import ApiError
from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.testing import RealCluster
from jobcore.testing import eventually
from jobcore.testing import install_kueue_crds
from jobcore.testing import require
from jobcore.testing.plugin import serve_real_cluster
from tests.support import installs
from tests.support.realruns import run_to_end

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 900
"""Seconds a test of this tier may take, its fixtures included: the first one starts the cluster,
imports its images (minutes when they are new) and deploys the controller, and another process
may hold the machine's cluster meanwhile (the kit waits for it)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIMEOUT))


@dataclass(frozen=True)
class Cluster:
    """The real cluster with the controller deployed: kubectl as admin, and pod logs."""

    real: RealCluster

    @property
    def kubeconfig(self) -> str:
        return self.real.kubeconfig_path

    def kubectl(self, *args: str, timeout: float = 60, check: bool = True) -> str:
        """kubectl's output; a failure fails the test with kubectl's error."""
        argv = installs.kubectl(self.kubeconfig, *args)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        if check and done.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)}: exit {done.returncode}: {done.stderr}")
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", "-o", "json", *args))

    def logs(self, namespace: str, pod: str, container: str) -> str:
        """The container's output as the kubelet kept it (empty if there is none yet)."""
        args = ("logs", "-n", namespace, pod, "-c", container)
        return self.kubectl(*args, check=False)

    def controller_pods(self) -> list[dict[str, Any]]:
        return list(self.json("pods", "-n", NAMESPACE, "-l", CONTROLLER_SELECTOR)["items"])

    def leader(self) -> str:
        """The pod holding the controller's Lease (its identity is `hostname_uuid`)."""
        lease = self.json("lease", "-n", NAMESPACE, NAME)
        holder: str = lease["spec"].get("holderIdentity") or ""
        return holder.partition("_")[0]


@pytest.fixture(scope="package")
def real_cluster() -> Iterator[RealCluster]:
    """The kit's real cluster for this tier only: stopped when its last test ends, not with
    the test run, since an idle cluster took 0.08 of a core from the tests after it."""
    yield from serve_real_cluster()


@pytest.fixture(scope="package")
def cluster(real_cluster: RealCluster, tmp_path_factory: pytest.TempPathFactory) -> Cluster:
    """The controller deployed from a copy of `manifests/` with `kubectl apply -k` (Kueue's
    CRDs installed first, see `deploy_with_kueue`), its two replicas Ready (the kubelet ran
    their probes) and one of them leading."""
    require(images.missing("pause", "jobcore"))
    asyncio.run(deploy_with_kueue(real_cluster, tmp_path_factory.mktemp("manifests")))
    return Cluster(real_cluster)


async def deploy_with_kueue(real: RealCluster, folder: Path) -> None:
    """Kueue's CRDs (the kit's, as the stand-in serves them), then the controller deployed
    from a copy of `manifests/` in `folder`: its `--kueue auto` finds Workloads served when
    it starts, as it would beside an installed Kueue."""
    async with await Client.from_kubeconfig(real.kubeconfig_path) as client:
        await install_kueue_crds(client)
    manifests = folder / "manifests"
    shutil.copytree(ROOT / "manifests", manifests)
    await deploy(real, manifests)


@pytest_asyncio.fixture
async def cluster_client(cluster: Cluster) -> AsyncIterator[Client]:
    client = await Client.from_kubeconfig(cluster.kubeconfig)
    try:
        yield client
    finally:
        await client.close()


@pytest_asyncio.fixture
async def cluster_namespace(
    cluster: Cluster, cluster_client: Client, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    """A fresh namespace whose default ServiceAccount has its token (pods need it first)."""
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].rstrip("-")
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    await cluster_client.create(NAMESPACES, namespace)
    try:
        await eventually(lambda: cluster.real.commands.default_token(name), timeout=60)
        yield name
    finally:
        with contextlib.suppress(ApiError):
            await cluster_client.delete(NAMESPACES, name)


async def run_in_cluster(
    cluster: Cluster,
    client: Client,
    resource: Resource,
    job: Object,
    folder: Path,
    *,
    container: str = "launcher",
    timeout: float = 120,
) -> tuple[dict[str, Any], str]:
    """`realruns.run_to_end` of a sample in the cluster's containers (its programs from
    `folder`, see `clusterjobs.with_programs_configmap`): its status and its launcher's output."""
    job, configmap = with_programs_configmap(job, folder)
    await client.create(CONFIGMAPS, configmap)
    return await run_to_end(client, cluster, resource, job, container=container, timeout=timeout)


def container_status(cluster: Cluster, namespace: str, pod: str, container: str) -> Any:
    """The container's status as the kubelet reported it (`kubectl get pod`)."""
    statuses = cluster.json("pod", "-n", namespace, pod)["status"].get("containerStatuses") or ()
    return next(s for s in statuses if s["name"] == container)


async def container_processes(
    cluster: Cluster, namespace: str, pod: str, container: str
) -> list[list[str]]:
    """The command lines of the container's processes, read on the host (containerd's list,
    then /proc): what runs in it, whatever tools its image has."""
    found = container_status(cluster, namespace, pod, container)
    container_id = found["containerID"].partition("://")[2]
    listed = await cluster.real.commands.ctr("tasks", "ps", container_id)
    pids = [line.split()[0] for line in listed.stdout.splitlines()[1:] if line.strip()]
    return [_arguments(pid) for pid in pids]


def _arguments(pid: str) -> list[str]:
    """A host process's command line (/proc/PID/cmdline: NUL-terminated arguments)."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


async def kill_container(cluster: Cluster, namespace: str, pod: str, container: str) -> None:
    """SIGKILL the container's process from the host, through containerd, as the kernel's OOM
    killer or a crash would end it: the kubelet sees it die and reports it. Through the agent
    the ranks may run before the kubelet reports the worker's container started: its
    containerID is waited for."""

    def started() -> bool:
        return "containerID" in container_status(cluster, namespace, pod, container)

    await eventually(started, timeout=30, interval=0.5)
    found = container_status(cluster, namespace, pod, container)
    runtime, _, container_id = found["containerID"].partition("://")
    assert runtime == "containerd", found
    await cluster.real.commands.ctr("tasks", "kill", "--signal", "SIGKILL", container_id)


async def create_in_cluster(client: Client, resource: Resource, job: Object, folder: Path) -> None:
    """Create `job` with its programs from `folder` (see `with_programs_configmap`)."""
    job, configmap = with_programs_configmap(job, folder)
    await client.create(CONFIGMAPS, configmap)
    await client.create(resource, job)


def job_pods(cluster: Cluster, namespace: str, job: str) -> dict[str, Any]:
    """The job's pods (`kubectl get pods -l jobcore.dev/job-name=JOB`), by name."""
    found = cluster.json("pods", "-n", namespace, "-l", f"{JOB_NAME_LABEL}={job}")["items"]
    return {pod["metadata"]["name"]: pod for pod in found}
