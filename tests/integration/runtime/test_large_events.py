"""Objects whose watch events are longer than a line aiohttp reads (4 MiB) against a real API
server: informers list and watch past them, and the controller keeps serving the jobs created
after them; an event past the client's cap is skipped and logged once."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import Client
from jobcore import Informer
from jobcore import Object
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import SimulatedNode
from jobcore.testing import create_until_phase
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobkinds.mpijob import MPIJobKind
from tests.integration.runtime.test_informer import Recorder
from tests.integration.runtime.test_informer import configmap
from tests.integration.runtime.test_informer import running
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

ESCAPED = "<" * 1_000_000
"""1 MB the server stores as is and sends as 6 MB: `\\u003c` for each `<`."""
FOREIGN = {JOB_NAME_LABEL: "foreign"}
"""The label the controller's caches select on; no job of this name exists."""


def huge_configmap(namespace: str, name: str) -> Object:
    obj = configmap(namespace, name, FOREIGN)
    obj["data"] = {"blob": ESCAPED}
    return obj


def huge_pod(namespace: str, name: str) -> Object:
    env = [{"name": "E", "value": ESCAPED}]
    container: dict[str, Any] = {"name": "c", "image": "x", "env": env}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": FOREIGN},
        "spec": {"nodeName": "elsewhere", "containers": [container]},
    }


def names(recorder: Recorder) -> list[str]:
    return [name for _, name in recorder.events]


async def test_an_informer_lists_and_watches_past_events_of_many_megabytes(
    client: Client, namespace: str
) -> None:
    for index in range(3):  # one list page with three of them
        await client.create(CONFIGMAPS, huge_configmap(namespace, f"listed-{index}"))
    informer = Informer(client, CONFIGMAPS, namespace=namespace)
    recorder = Recorder()
    informer.add_handler(recorder)
    async with running(informer):
        await client.create(CONFIGMAPS, huge_configmap(namespace, "watched"))
        await client.create(CONFIGMAPS, configmap(namespace, "after"))
        await recorder.wait_for(lambda: "after" in names(recorder))
        assert names(recorder) == ["listed-0", "listed-1", "listed-2", "watched", "after"]
        watched = informer.get("watched", namespace)
        assert watched is not None
        assert watched["data"]["blob"] == ESCAPED


async def test_an_event_past_the_cap_is_skipped_and_logged_once(
    kubeconfig_path: str, namespace: str
) -> None:
    async with await Client.from_kubeconfig(kubeconfig_path, max_event_bytes=2**20) as client:
        before = await client.create(CONFIGMAPS, configmap(namespace, "before"))
        await client.create(CONFIGMAPS, huge_configmap(namespace, "huge"))
        await client.create(CONFIGMAPS, configmap(namespace, "after"))

        async def watched_names() -> list[str]:
            seen = []
            async for _, obj in client.watch(
                CONFIGMAPS,
                namespace,
                resource_version=before["metadata"]["resourceVersion"],
                allow_bookmarks=False,
            ):
                seen.append(obj["metadata"]["name"])
                if seen[-1] == "after":
                    return seen
            raise AssertionError(f"the watch ended after {seen}")

        with capture_logs() as logs:
            assert await watched_names() == ["after"]
            assert await watched_names() == ["after"]  # a watch again from the same version
    skips = [e for e in logs if e["event"] == "skipped a watch event it cannot read"]
    assert len(skips) == 1, logs
    assert skips[0]["reason"] == "too long"
    assert skips[0]["size"] > 6_000_000
    assert skips[0]["watch"] == f"/api/v1/namespaces/{namespace}/configmaps"


async def test_the_controller_serves_jobs_created_after_huge_foreign_objects(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.2)
    async with job_controller(client, MPIJobKind(), namespace=namespace) as controller:
        await eventually(lambda: all(i.has_synced() for i in controller.informers))
        await client.create(CONFIGMAPS, huge_configmap(namespace, "foreign"))
        await client.create(PODS, huge_pod(namespace, "foreign"))
        await create_until_phase(
            client, MPIJOBS, mpijob(namespace, "after"), "Succeeded", timeout=60
        )
