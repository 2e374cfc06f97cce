"""TorchJob end to end: the real controller with the plugin, a real API server, a simulated node.

The fixtures `client`, `namespace` and `simulated_node` come from jobcore's pytest plugin,
loaded automatically once jobcore is installed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from jobcore import SERVICES
from jobcore import Client
from jobcore import Object
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import SimulatedNode
from jobcore.testing import condition
from jobcore.testing import job_controller
from jobcore.testing import live_pods
from jobcore.testing import wait_for_phase
from torchjob import TorchJobKind

pytestmark = pytest.mark.integration

KIND = TorchJobKind()
TORCHJOBS = KIND.resource
MASTER = f"{REPLICA_TYPE_LABEL}=master"


def torchjob(namespace: str, name: str) -> Object:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "torch", "command": ["x"]}]}}
    return {
        "apiVersion": TORCHJOBS.api_version,
        "kind": TORCHJOBS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"master": {"template": template}, "worker": {"replicas": 2, "template": template}},
    }


@pytest.fixture
async def controller(client: Client, namespace: str) -> AsyncIterator[None]:
    """The TorchJob controller, scoped to the test's namespace."""
    async with job_controller(client, KIND, namespace=namespace):
        yield


@pytest.mark.usefixtures("controller")
async def test_the_master_exiting_0_succeeds_the_job(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(MASTER, exit_code=0, after=0.5)
    await client.create(TORCHJOBS, torchjob(namespace, "ok"))

    status = await wait_for_phase(client, TORCHJOBS, namespace, "ok", "Succeeded")
    assert condition(status, "Completed")["status"] == "True"
    assert [task["type"] for task in status["tasks"]] == ["master", "worker"]
    pods = await live_pods(client, namespace)
    assert sorted(pods) == ["ok-master-0", "ok-worker-0", "ok-worker-1"]
    for rank, name in enumerate(sorted(pods)):
        (container,) = pods[name]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["MASTER_ADDR"] == f"ok-master-0.ok.{namespace}.svc"
        assert (env["MASTER_PORT"], env["WORLD_SIZE"], env["RANK"]) == ("29500", "3", str(rank))
    service = await client.get(SERVICES, "ok", namespace)
    assert service["spec"]["clusterIP"] == "None"


@pytest.mark.usefixtures("controller")
async def test_the_master_exiting_2_fails_the_job_naming_the_pod(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(MASTER, exit_code=2)
    await client.create(TORCHJOBS, torchjob(namespace, "bad"))

    status = await wait_for_phase(client, TORCHJOBS, namespace, "bad", "Failed")
    assert condition(status, "Failed")["message"] == "The master exited with an error code."
    assert condition(status, "ReplicaFailure")["message"] == (
        "Pod[bad-master-0] exited with error code 2 (container pytorch)"
    )
