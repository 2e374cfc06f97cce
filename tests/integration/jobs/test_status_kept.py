"""A job's status and children are never lost to another writer, a failed request, or a bad value.

The real controller against the real API server; the simulated node plays the pods. Each test
makes one thing go wrong that a production cluster sees: a cache that lags another writer, a
pod deletion the API server fails, a timestamp another tool stored, a ConfigMap edited by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobcore import CONFIGMAPS
from jobcore import Client
from jobcore import EventRecorder
from jobcore import Expectations
from jobcore import Informer
from jobcore import Object
from jobcore import Request
from jobcore._jobs.children import JobChildren
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import JobReconciler
from jobcore.jobs import Observed
from jobcore.jobs import RetryBackoff
from jobcore.jobs import crd_for
from jobcore.testing import ControlPlane
from jobcore.testing import FaultProxy
from jobcore.testing import Faults
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import wait_for_end
from jobkinds.mpijob import MPIJobKind
from tests.support.fixtures import controller_fixture
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import expire
from tests.support.mpijobs import mpijob
from tests.support.mpijobs import run_to_end

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
LAUNCHER = f"{REPLICA_TYPE_LABEL}=launcher"

controller = controller_fixture(KIND)


async def test_a_status_write_never_overwrites_a_newer_status(
    client: Client, namespace: str
) -> None:
    await install_crd(client, crd_for(KIND))
    invalid = mpijob(namespace, "raced", ssh={"sshAuthMountPath": "relative"})
    await client.create(MPIJOBS, invalid)
    # The controller's cache, taken now and then left behind by another writer's status.
    jobs = Informer(client, MPIJOBS, namespace=namespace)
    async with background(jobs.run()):
        await jobs.wait_for_sync()
    newer = {"status": {"phase": "Running", "restarts": 2}}
    await client.patch(MPIJOBS, "raced", newer, namespace, subresource="status")
    reconciler = JobReconciler(
        kind=KIND,
        client=client,
        jobs=jobs,
        children={},
        recorder=EventRecorder(client, component="test"),
    )
    # The job is invalid: the reconciler would mark it Failed, over a status it has not seen.
    await reconciler.reconcile(Request(namespace, "raced"))
    assert await job_status(client, MPIJOBS, namespace, "raced") == newer["status"]


async def test_a_restart_is_counted_before_the_pods_are_deleted(
    client: Client,
    namespace: str,
    control_plane: object,
    simulated_node: SimulatedNode,
    tmp_path: Path,
) -> None:
    if not isinstance(control_plane, ControlPlane):
        pytest.skip("needs the test control plane's URL and token for the proxy")
    failing = {"launchers": 0}

    def first_launcher(pod: Object) -> bool:
        labels = pod["metadata"].get("labels") or {}
        if labels.get(REPLICA_TYPE_LABEL) != "launcher" or failing["launchers"]:
            return False
        failing["launchers"] += 1
        return True

    simulated_node.when(first_launcher, exit_code=1, after=0.2)
    simulated_node.when(LAUNCHER, exit_code=0, after=0.2)
    policy = {"backoffLimit": 3, "restartPolicy": "OnFailure"}
    no_deletions = Faults(server_error=1.0, only=r"DELETE .*/pods/")
    async with FaultProxy(control_plane.url, control_plane.token, faults=Faults()) as proxy:
        kubeconfig = proxy.kubeconfig(str(tmp_path / "proxied.kubeconfig"))
        async with (
            await Client.from_kubeconfig(kubeconfig) as proxied,
            job_controller(proxied, KIND, namespace=namespace, retry_backoff=RetryBackoff(1)),
        ):
            proxy.faults = no_deletions
            await client.create(MPIJOBS, mpijob(namespace, "retried", runPolicy=policy))

            async def restarting() -> bool:
                status = await job_status(client, MPIJOBS, namespace, "retried")
                return status.get("restarts") is not None

            await eventually(restarting, timeout=20)
            # The deletions keep failing; the restart stays counted once, not per try.
            await eventually(lambda: proxy.injected["server_error"] >= 3, timeout=20)
            status = await job_status(client, MPIJOBS, namespace, "retried")
            assert status["restarts"] == 1
            assert condition(status, "Running")["reason"] == "Restarting"
            proxy.faults = Faults()
            status = await wait_for_end(client, MPIJOBS, namespace, "retried", timeout=60)
    assert (status["phase"], status["restarts"]) == ("Succeeded", 1)


@pytest.mark.usefixtures("controller", "launchers_succeed")
async def test_a_malformed_last_transition_time_is_replaced_and_the_ttl_still_runs(
    client: Client, namespace: str
) -> None:
    status = await run_to_end(client, namespace, "stamped")
    # Another tool rewrites the end time, then the job asks to be deleted 1 s after it.
    for item in status["conditions"]:
        if item["type"] == "Completed":
            item["lastTransitionTime"] = "yesterday"
    await client.patch(MPIJOBS, "stamped", {"status": status}, namespace, subresource="status")
    await expire(client, namespace, "stamped")


@pytest.mark.usefixtures("controller", "simulated_node")
async def test_a_config_map_whose_data_was_removed_is_repaired(
    client: Client, namespace: str
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "edited"))

    async def configs() -> dict[str, Any]:
        maps = (await client.list(CONFIGMAPS, namespace))["items"]
        return {m["metadata"]["name"]: m.get("data") for m in maps if _owned(m, "edited")}

    await eventually(configs, timeout=10)
    made = await configs()
    name = next(iter(made))
    remove = [{"op": "remove", "path": "/data"}]
    await client.patch(CONFIGMAPS, name, remove, namespace, patch_type="json")

    async def repaired() -> bool:
        return bool((await configs())[name] == made[name])

    await eventually(repaired, timeout=10)


async def test_a_config_map_is_never_patched_over_a_change_its_read_did_not_see(
    client: Client, namespace: str
) -> None:
    meta = {"name": "hostfile", "namespace": namespace}
    read = await client.create(CONFIGMAPS, {"metadata": meta, "data": {"hostfile": "a"}})
    edited = {"data": {"hostfile": "by hand"}}
    await client.patch(CONFIGMAPS, "hostfile", edited, namespace)
    children = JobChildren(KIND, client, {}, Expectations())
    desired = [{"kind": "ConfigMap", "metadata": meta, "data": {"hostfile": "b"}}]
    # Read before the edit: refused, the edit stays; read again: written.
    assert not await children.update_config(desired, Observed({CONFIGMAPS: {"hostfile": read}}))
    assert (await client.get(CONFIGMAPS, "hostfile", namespace))["data"] == edited["data"]
    current = await client.get(CONFIGMAPS, "hostfile", namespace)
    assert await children.update_config(desired, Observed({CONFIGMAPS: {"hostfile": current}}))
    assert (await client.get(CONFIGMAPS, "hostfile", namespace))["data"] == {"hostfile": "b"}


def _owned(obj: Object, job: str) -> bool:
    return any(ref["name"] == job for ref in obj["metadata"].get("ownerReferences") or ())
