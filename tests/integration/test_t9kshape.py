"""Both T9k shapes through the real API server: accepted by the CRD, same children."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.sandbox import install_crd
from jobcore import (
    CONFIGMAPS,
    JOB_NAME_LABEL,
    PODS,
    SECRETS,
    SERVICES,
    Client,
    Manager,
    Object,
    add_job_controller,
    crd_for,
)
from jobcore.testing import background, eventually
from jobkinds.mpijob import MPIJobKind

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
SEED = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "manifests/samples/mpijob-random-walk.yaml").read_text()
)


def current_shape(name: str) -> Object:
    seed = SEED["spec"]
    container = copy.deepcopy(seed["worker"]["template"]["spec"]["containers"][0])
    container["name"] = "worker"
    return {
        "apiVersion": KIND.resource.api_version,
        "kind": KIND.resource.kind,
        "metadata": {"name": name},
        "spec": {
            "replicaSpecs": [
                {"type": "launcher", "replicas": 1, "template": {}},
                {
                    "type": "worker",
                    "replicas": 5,
                    "template": {"spec": {"containers": [container]}},
                },
            ],
            "mpiConfig": {
                "home": seed["mpiHome"],
                "mca": seed["mca"],
                "extraArgs": seed["worker"]["extraMPIArgs"],
                "script": seed["worker"]["cmd"],
            },
            "runPolicy": seed["runPolicy"],
            "ssh": seed["ssh"],
        },
    }


@pytest.fixture
async def controller(client: Client, namespace: str) -> AsyncIterator[None]:
    await install_crd(client, crd_for(KIND))
    manager = Manager(client, metrics_address=None, health_address=None)
    add_job_controller(manager, KIND, namespace=namespace)
    async with background(manager.run()):
        yield


def _comparable(obj: Object, namespace: str, job: str) -> Any:
    """An object's content with the job's name, uids and server-set fields taken out."""
    content = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    content["labels"] = obj["metadata"].get("labels", {})
    if obj["kind"] == "Secret":
        content = {"keys": sorted(obj.get("data", {}))}
    if obj["kind"] == "Service":
        content["spec"] = {k: v for k, v in obj["spec"].items() if k not in ("clusterIPs",)}
    return json.loads(json.dumps(content).replace(namespace, "NS").replace(job, "JOB"))


async def children(client: Client, namespace: str, job: str) -> dict[str, Any]:
    found = {}
    for resource in (SECRETS, CONFIGMAPS, SERVICES, PODS):
        items = await client.list(resource, namespace, label_selector=f"{JOB_NAME_LABEL}={job}")
        for obj in items["items"]:
            obj.setdefault("kind", resource.kind)
            name = obj["metadata"]["name"].replace(job, "JOB")
            found[f"{resource.kind}/{name}"] = _comparable(obj, namespace, job)
    return found


async def test_a_current_shape_job_gets_the_same_children_as_its_seed_twin(
    client: Client, namespace: str, controller: None
) -> None:
    seed = copy.deepcopy(SEED)
    seed["metadata"] = {"name": "alpha-job", "namespace": namespace}
    current = current_shape("bravo-job")
    current["metadata"]["namespace"] = namespace
    await client.create(KIND.resource, seed)
    await client.create(KIND.resource, current)

    async def both_created() -> bool:
        counts = [len(await children(client, namespace, job)) for job in ("alpha-job", "bravo-job")]
        return counts == [8, 8]  # secret, hostfile, service and 5 workers each

    await eventually(both_created)
    assert await children(client, namespace, "seed") == await children(client, namespace, "current")


async def test_a_job_mixing_the_shapes_fails_naming_the_fields(
    client: Client, namespace: str, controller: None
) -> None:
    mixed = current_shape("mixed")
    mixed["metadata"]["namespace"] = namespace
    mixed["spec"]["mca"] = {"btl": "^openib"}
    await client.create(KIND.resource, mixed)

    async def failed() -> dict[str, Any] | None:
        status = (await client.get(KIND.resource, "mixed", namespace)).get("status") or {}
        return status if status.get("phase") == "Failed" else None

    await eventually(failed)
    status = await failed()
    assert status is not None
    condition = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert condition["reason"] == "InvalidSpec"
    assert "spec.mpiConfig" in condition["message"] and "spec.mca" in condition["message"]
