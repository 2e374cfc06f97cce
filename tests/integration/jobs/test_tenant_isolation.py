"""One namespace's objects cannot act on another's jobs: a pod in namespace B that names a job
of namespace A as its controller is not that job's child, so it neither ends the job nor is
touched on its behalf. The real controller against a real API server, simulated nodes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import Client
from jobcore import Object
from jobcore import Request
from jobcore import owner_reference
from jobcore.jobs import REPLICA_INDEX_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import ControlPlane
from jobcore.testing import FaultProxy
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import resync
from jobcore.testing import temporary_namespace
from jobcore.testing import wait_for_phase
from jobcore.testing import wait_for_pods
from tests.integration.runtime.test_informer import configmap
from tests.support.kindjobs import MPIJOB
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration


@pytest.fixture
async def other_namespace(client: Client, namespace: str) -> AsyncIterator[str]:
    """A second tenant's namespace, beside the test's."""
    async with temporary_namespace(client, f"{namespace[:30]}-b") as name:
        yield name


def impostor(namespace: str, job: Object, worker: Object, anchor: Object) -> Object:
    """A pod in `namespace` dressed as `job`'s launcher: its name, labels and controller.

    `anchor`, an object of its own namespace, owns it too: Kubernetes' garbage collector
    deletes a dependent only once none of its owners exists in its namespace, and would
    otherwise take the impostor away before it could pass for a launcher that exited 0."""
    container = worker["spec"]["containers"][0]
    labels = dict(worker["metadata"]["labels"])
    labels.pop(REPLICA_INDEX_LABEL, None)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job['metadata']['name']}-launcher",
            "namespace": namespace,
            "labels": {**labels, REPLICA_TYPE_LABEL: "launcher"},
            "ownerReferences": [owner_reference(job), owner_reference(anchor, controller=False)],
        },
        "spec": {"containers": [{"name": "launcher", "image": container["image"]}]},
    }


@pytest.fixture
async def recorded(
    control_plane: ControlPlane, tmp_path: Path
) -> AsyncIterator[tuple[FaultProxy, Client]]:
    """A client whose requests a faultless proxy records (`FaultProxy.writes`)."""
    async with FaultProxy(control_plane.url, control_plane.token) as proxy:
        path = proxy.kubeconfig(str(tmp_path / "kubeconfig"))
        async with await Client.from_kubeconfig(path) as client:
            yield proxy, client


async def test_a_pod_in_another_namespace_naming_a_job_as_its_controller_is_not_its_child(
    client: Client,
    namespace: str,
    other_namespace: str,
    unready_node: SimulatedNode,
    recorded: tuple[FaultProxy, Client],
) -> None:
    proxy, watched = recorded
    theirs = SimulatedNode(client, name=f"node-{other_namespace}"[:63], namespace=other_namespace)
    async with (
        background(theirs.run()),
        job_controller(watched, MPIJOB.kind, namespace=None) as controller,
    ):
        job = await client.create(MPIJOBS, mpijob(namespace, "train"))
        workers = {"train-worker-0", "train-worker-1"}
        # Watching every namespace, the controller first lists every pod that the session's
        # other tests left (15 s of a loaded CI-style run).
        ours = await wait_for_pods(client, namespace, workers, phase="Running", timeout=90)
        anchor = await client.create(CONFIGMAPS, configmap(other_namespace, "anchor"))
        await client.create(PODS, impostor(other_namespace, job, ours["train-worker-0"], anchor))
        await theirs.succeed(other_namespace, "train-launcher")  # "the launcher exited 0"
        await asyncio.sleep(1)
        await resync(controller, Request(namespace, "train"))  # as any event of its pods does
        await asyncio.sleep(2)

        status = await job_status(client, MPIJOBS, namespace, "train")
        print(f"job after another namespace's pod exited 0: {status.get('phase')}")
        assert status.get("phase") == "Pending", status
        kept = await live_pods(client, namespace)
        assert {n: p["metadata"]["uid"] for n, p in kept.items()} == {
            n: p["metadata"]["uid"] for n, p in ours.items()
        }, "the job's own pods are untouched"

        for worker in workers:
            await unready_node.set_ready(namespace, worker, ready=True)
        await wait_for_pods(client, namespace, {*workers, "train-launcher"}, phase="Running")
        await unready_node.succeed(namespace, "train-launcher")
        await wait_for_phase(client, MPIJOBS, namespace, "train", "Succeeded")
    # The controller writes nothing there, its clean-up included.
    elsewhere = [w for w in proxy.writes if f"/namespaces/{other_namespace}/" in w[1]]
    print(f"the controller's writes to the other namespace: {len(elsewhere)}")
    assert elsewhere == []
    assert any(f"/namespaces/{namespace}/pods" in path for _, path in proxy.writes)
