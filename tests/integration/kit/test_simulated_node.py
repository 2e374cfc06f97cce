"""The simulated node plays scheduler and kubelet faithfully enough to test controllers."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from jobcore import NODES
from jobcore import PODS
from jobcore import Client
from jobcore import Object
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import wait_for_deletion

pytestmark = pytest.mark.integration


def pod(namespace: str, name: str, restart: str = "Never", **labels: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "restartPolicy": restart,
            "containers": [{"name": "main", "image": "busybox"}, {"name": "side", "image": "x"}],
        },
    }


async def phase_of(client: Client, namespace: str, name: str) -> str | None:
    status: dict[str, Any] = (await client.get(PODS, name, namespace)).get("status") or {}
    return status.get("phase")


def condition(obj: Object, kind: str) -> str | None:
    for item in obj["status"].get("conditions") or ():
        if item["type"] == kind:
            return str(item["status"])
    return None


async def test_binds_runs_and_readies_pods(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    await client.create(PODS, pod(namespace, "p"))

    async def ready() -> bool:
        current = await client.get(PODS, "p", namespace)
        return (
            current["spec"].get("nodeName") == simulated_node.name
            and condition(current, "Ready") == "True"
        )

    await eventually(ready)
    current = await client.get(PODS, "p", namespace)
    assert current["status"]["phase"] == "Running"
    assert current["status"]["podIP"].startswith("10.244.")
    assert [c["name"] for c in current["status"]["containerStatuses"]] == ["main", "side"]
    assert all("running" in c["state"] for c in current["status"]["containerStatuses"])
    assert (await client.get(NODES, simulated_node.name))["metadata"]["name"]


async def test_rules_end_matching_pods_with_exit_code_and_reason(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    simulated_node.when("role=launcher", exit_code=0, after=0.1)
    simulated_node.when("role=oom", exit_code=137, reason="OOMKilled")
    await client.create(PODS, pod(namespace, "launcher", role="launcher"))
    await client.create(PODS, pod(namespace, "oom", role="oom"))
    await client.create(PODS, pod(namespace, "worker", role="worker"))

    async def ended(name: str, phase: str) -> bool:
        return await phase_of(client, namespace, name) == phase

    await eventually(lambda: ended("launcher", "Succeeded"))
    await eventually(lambda: ended("oom", "Failed"))
    oom = await client.get(PODS, "oom", namespace)
    terminated = oom["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "OOMKilled")
    assert condition(oom, "Ready") == "False"
    assert await phase_of(client, namespace, "worker") == "Running"


async def test_driving_one_pod_by_hand(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    restart = {"restarts": "OnFailure", "evicted": "Always"}
    for name in ("fails", "evicted", "waiting", "restarts"):
        await client.create(PODS, pod(namespace, name, restart=restart.get(name, "Never")))
    for name in ("fails", "evicted", "restarts"):
        await eventually(functools.partial(ended_running, client, namespace, name))
    await simulated_node.fail(namespace, "fails", exit_code=3)
    await simulated_node.evict(namespace, "evicted")
    await simulated_node.set_waiting(
        namespace, "waiting", reason="ImagePullBackOff", message="pull failed"
    )
    await simulated_node.fail(namespace, "restarts", exit_code=1)

    fails = await client.get(PODS, "fails", namespace)
    assert fails["status"]["phase"] == "Failed"
    assert fails["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    evicted = await client.get(PODS, "evicted", namespace)
    assert (evicted["status"]["phase"], evicted["status"]["reason"]) == ("Failed", "Evicted")
    waiting = await client.get(PODS, "waiting", namespace)
    assert waiting["status"]["phase"] == "Pending"
    state = waiting["status"]["containerStatuses"][0]["state"]["waiting"]
    assert state == {"reason": "ImagePullBackOff", "message": "pull failed"}
    restarted = await client.get(PODS, "restarts", namespace)
    assert restarted["status"]["phase"] == "Running", "OnFailure restarts the container"
    container = restarted["status"]["containerStatuses"][0]
    assert container["restartCount"] == 1
    assert container["lastState"]["terminated"]["exitCode"] == 1


async def ended_running(client: Client, namespace: str, name: str) -> bool:
    return await phase_of(client, namespace, name) == "Running"


async def test_deleted_pods_are_finalised_like_a_kubelet_would(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    await client.create(PODS, pod(namespace, "gone"))
    await eventually(lambda: ended_running(client, namespace, "gone"))
    await client.delete(PODS, "gone", namespace)  # default grace period: 30 s

    await wait_for_deletion(client, PODS, namespace, "gone", timeout=10)


async def test_ready_after_delays_readiness(client: Client, namespace: str) -> None:
    node = SimulatedNode(
        client, name=f"slow-{namespace}"[:63], namespace=namespace, ready_after=1.0
    )
    async with background(node.run()):
        await client.create(PODS, pod(namespace, "slow"))
        await eventually(lambda: ended_running(client, namespace, "slow"))
        assert condition(await client.get(PODS, "slow", namespace), "Ready") == "False"

        async def ready() -> bool:
            return condition(await client.get(PODS, "slow", namespace), "Ready") == "True"

        await eventually(ready, timeout=5)
