"""Both T9k shapes through the real API server: accepted by the CRD, same children."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Client
from jobcore import Manager
from jobcore import Object
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import JobKind
from jobcore.jobs import add_job_controller
from jobcore.jobs import crd_for
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.mpijob import MPIJobKind
from tests.support.jobdocs import sample

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
CAI = ColossalAIJobKind()


def named(sample_name: str, name: str, namespace: str) -> Object:
    """The sample job `sample_name` as job `name` of `namespace`."""
    job = sample(sample_name)
    job["metadata"] = {"name": name, "namespace": namespace}
    return job


@pytest.fixture
async def controller(client: Client, namespace: str) -> AsyncIterator[None]:
    manager = Manager(client, metrics_address=None, health_address=None)
    for kind in (KIND, CAI):
        await install_crd(client, crd_for(kind))
        add_job_controller(manager, kind, namespace=namespace)
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


async def twins_children(
    client: Client, namespace: str, count: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The children of jobs "alpha-job" and "bravo-job", once each has `count` of them."""
    found: list[dict[str, Any]] = []

    async def both_created() -> bool:
        found[:] = [await children(client, namespace, job) for job in ("alpha-job", "bravo-job")]
        return [len(each) for each in found] == [count, count]

    await eventually(both_created)
    return found[0], found[1]


@pytest.mark.parametrize(
    ("kind", "twins", "count"),
    [
        (KIND, ("mpijob-random-walk", "mpijob-current-shape"), 8),  # ssh, hostfile, service, 5 pods
        (CAI, ("colossalaijob-example", "colossalaijob-current-shape"), 5),  # ..., 2 pods
    ],
    ids=["MPIJob", "ColossalAIJob"],
)
@pytest.mark.usefixtures("controller")
async def test_a_current_shape_job_gets_the_same_children_as_its_seed_twin(
    client: Client, namespace: str, kind: JobKind[Any], twins: tuple[str, str], count: int
) -> None:
    """`twins`: the samples of a job in the seed's shape and of the same job in today's."""
    seed = named(twins[0], "alpha-job", namespace)
    current = named(twins[1], "bravo-job", namespace)
    assert "replicaSpecs" in current["spec"] and "replicaSpecs" not in seed["spec"]
    await client.create(kind.resource, seed)
    await client.create(kind.resource, current)

    alpha, bravo = await twins_children(client, namespace, count)
    assert alpha == bravo


async def test_a_job_mixing_the_shapes_fails_naming_the_fields(
    client: Client, namespace: str, controller: None
) -> None:
    mixed = named("mpijob-current-shape", "mixed", namespace)
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
