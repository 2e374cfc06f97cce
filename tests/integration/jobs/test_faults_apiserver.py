"""Faults of the API server under running MPIJobs: a restart, and history compacted away (410).

These tests restart and compact a control plane of their own, so the session's API server,
which the other tests share, is never disturbed. The controller and the simulated node run in
the test process; the tests assert what a user sees: job statuses, pods, events and metrics.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from collections.abc import Iterator

import pytest

from jobcore import CONFIGMAPS
from jobcore import NAMESPACES
from jobcore import PODS
from jobcore import REGISTRY
from jobcore import Client
from jobcore import Object
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import crd_for
from jobcore.testing import ControlPlane
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import job_controller
from jobcore.testing import live_pods
from jobcore.testing import wait_for_events
from jobcore.testing import wait_for_phases
from jobkinds.mpijob import MPIJobKind
from tests.support.mpijobs import mpijob
from tests.support.mpijobs import pods_of

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
MPIJOBS = KIND.resource
LAUNCHER = f"{REPLICA_TYPE_LABEL}=launcher"


@pytest.fixture(scope="module")
def plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """A control plane of this module's own, started on a private loop as the plugin does."""
    if request.config.getoption("use_existing_cluster") or (
        request.config.getoption("k8s_backend") != "envtest"
    ):
        pytest.skip("restarts an envtest control plane of its own")
    loop = asyncio.new_event_loop()
    plane = ControlPlane()
    try:
        loop.run_until_complete(plane.start())
        yield plane
    finally:
        loop.run_until_complete(plane.stop())
        loop.close()


@pytest.fixture
async def client(plane: ControlPlane) -> AsyncIterator[Client]:
    """A client of the module's control plane, with the MPIJob CRD installed."""
    async with await Client.from_kubeconfig(plane.kubeconfig_path) as client:
        await install_crd(client, crd_for(KIND))
        yield client


@pytest.fixture
async def namespace(client: Client) -> str:
    name = f"faults-{uuid.uuid4().hex[:6]}"
    await client.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


@pytest.fixture
async def node(client: Client, namespace: str) -> AsyncIterator[SimulatedNode]:
    """A simulated node, and the MPIJob controller beside it, scoped to the test's namespace."""
    node = SimulatedNode(client, name=f"node-{namespace}", namespace=namespace)
    async with background(node.run()), job_controller(client, KIND, namespace=namespace):
        yield node


async def pod_uids(client: Client, namespace: str) -> dict[str, str]:
    return {name: p["metadata"]["uid"] for name, p in (await live_pods(client, namespace)).items()}


async def succeed_launchers(node: SimulatedNode, namespace: str, names: list[str]) -> None:
    await asyncio.gather(*(node.succeed(namespace, f"{name}-launcher") for name in names))


END_NOW = "faults.test/end"
"""A launcher annotated with this ends 2 s later, as the node decides: while the API is down."""


def annotated_to_end(pod: Object) -> bool:
    return END_NOW in (pod["metadata"].get("annotations") or {})


@pytest.mark.timeout(120)
async def test_jobs_run_to_the_end_across_an_api_server_restart(
    plane: ControlPlane, client: Client, namespace: str, node: SimulatedNode
) -> None:
    names = [f"job-{i}" for i in range(20)]
    await asyncio.gather(*(client.create(MPIJOBS, mpijob(namespace, n)) for n in names))
    await wait_for_phases(client, MPIJOBS, namespace, names, "Running", timeout=60)
    before = await pod_uids(client, namespace)
    assert set(before) == pods_of(names)

    # The launchers of half the jobs end while the API server is down: the node must report
    # it once the server is back, and the controller must see it through its new watches.
    node.when(annotated_to_end, exit_code=0, after=2.0)
    ending = [f"{name}-launcher" for name in names[:10]]
    patch = {"metadata": {"annotations": {END_NOW: "true"}}}
    await asyncio.gather(*(client.patch(PODS, pod, patch, namespace) for pod in ending))

    def node_knows() -> bool:
        return all(
            annotated_to_end(node.pods.get(pod, namespace) or {"metadata": {}}) for pod in ending
        )

    await eventually(node_knows)
    await plane.restart_apiserver()
    # The other half end once it is back.
    await succeed_launchers(node, namespace, names[10:])
    node.when(LAUNCHER, exit_code=0, after=0.2)  # jobs created from now on
    await client.create(MPIJOBS, mpijob(namespace, "after"))
    await wait_for_phases(client, MPIJOBS, namespace, [*names, "after"], "Succeeded", timeout=60)

    after = await pod_uids(client, namespace)
    assert set(after) == pods_of([*names, "after"]), "no job lost, no pod left over"
    assert {name: after[name] for name in before} == before, "no pod deleted and created again"
    for name in names:
        reasons = await wait_for_events(client, namespace, name, "Succeeded")
        assert reasons.count("Succeeded") == 1, f"{name}: {reasons}"


def job_info(namespace: str, name: str) -> float | None:
    labels = {"kind": KIND.resource.kind, "namespace": namespace, "name": name}
    return REGISTRY.get_sample_value("jobcore_job_info", labels)


@pytest.mark.timeout(120)
async def test_watches_relist_after_410_gone_and_miss_no_delete(
    plane: ControlPlane, client: Client, namespace: str, node: SimulatedNode
) -> None:
    names = ["steady", "robbed", "gone"]
    for name in names:
        await client.create(MPIJOBS, mpijob(namespace, name))
    await wait_for_phases(client, MPIJOBS, namespace, names, "Running", timeout=60)
    before = await pod_uids(client, namespace)
    assert job_info(namespace, "gone") == 1

    # Behind the API server's back: a worker pod, a hostfile and a whole job disappear, and
    # etcd forgets the history. Every informer's watch from its old resourceVersion then gets
    # 410 Gone: only a new list shows the deletions, and no watch event ever will.
    await plane.stop_apiserver()
    for key in (
        f"/registry/pods/{namespace}/robbed-worker-1",
        f"/registry/configmaps/{namespace}/robbed-hostfile",
        f"/registry/{MPIJOBS.group}/{MPIJOBS.plural}/{namespace}/gone",
    ):
        assert await plane.etcd_delete(key) == 1, key
    await plane.etcd_compact()
    await plane.start_apiserver()

    async def worker_recreated() -> bool:
        pods = await live_pods(client, namespace)
        worker = pods.get("robbed-worker-1")
        return bool(
            worker
            and worker["metadata"]["uid"] != before["robbed-worker-1"]
            and worker.get("status", {}).get("phase") == "Running"
        )

    await eventually(worker_recreated, timeout=60, interval=0.2)

    async def hostfile_recreated() -> bool:
        found = await client.list(CONFIGMAPS, namespace)
        return "robbed-hostfile" in {c["metadata"]["name"] for c in found["items"]}

    await eventually(hostfile_recreated, timeout=30, interval=0.2)
    await eventually(lambda: job_info(namespace, "gone") is None, timeout=30)

    await succeed_launchers(node, namespace, ["steady", "robbed"])
    await wait_for_phases(client, MPIJOBS, namespace, ["steady", "robbed"], "Succeeded", timeout=60)
    after = await pod_uids(client, namespace)
    unchanged = {name: uid for name, uid in before.items() if name != "robbed-worker-1"}
    assert {name: after.get(name) for name in unchanged} == unchanged
    assert job_info(namespace, "steady") == 1
