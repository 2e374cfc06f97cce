"""The event recorder against a real API server: repeats counted, failures swallowed."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from structlog.testing import capture_logs

from jobcore._runtime.client import Client
from jobcore._runtime.events import EventRecorder
from jobcore._runtime.resources import CONFIGMAPS
from jobcore._runtime.resources import EVENTS
from jobcore._runtime.resources import NAMESPACES
from jobcore._runtime.resources import SERVICES
from jobcore._runtime.resources import Object
from jobcore.testing import event_reasons

pytestmark = pytest.mark.integration


@pytest.fixture
async def namespace_object(client: Client, namespace: str) -> Object:
    return await client.get(NAMESPACES, namespace)


@pytest.fixture
async def configmap(client: Client, namespace: str) -> Object:
    meta = {"name": "subject", "namespace": namespace}
    return await client.create(
        CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    )


@pytest.fixture
def recorder(client: Client) -> EventRecorder:
    return EventRecorder(client, component="test-controller")


async def events_about(client: Client, obj: Object, namespace: str) -> list[Object]:
    selector = f"involvedObject.uid={obj['metadata']['uid']}"
    events: list[Object] = (await client.list(EVENTS, namespace, field_selector=selector))["items"]
    return sorted(events, key=lambda event: event["reason"])


async def test_repeats_are_counted_on_one_event(
    client: Client, recorder: EventRecorder, configmap: Object
) -> None:
    for _ in range(3):
        await recorder.record(configmap, type="Normal", reason="Created", message="pods created")
    await recorder.record(configmap, type="Warning", reason="Failed", message="a pod failed")

    namespace = configmap["metadata"]["namespace"]
    created, failed = await events_about(client, configmap, namespace)
    assert created["count"] == 3
    assert created["type"] == "Normal"
    assert created["message"] == "pods created"
    assert created["source"] == {"component": "test-controller"}
    assert created["reportingComponent"] == "test-controller"
    assert created["firstTimestamp"] <= created["lastTimestamp"]
    assert created["metadata"]["name"].startswith("subject.")
    assert created["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "namespace": namespace,
        "name": "subject",
        "uid": configmap["metadata"]["uid"],
        "resourceVersion": configmap["metadata"]["resourceVersion"],
    }
    assert (failed["count"], failed["type"], failed["reason"]) == (1, "Warning", "Failed")


async def test_concurrent_repeats_share_one_event(
    client: Client, recorder: EventRecorder, configmap: Object
) -> None:
    await asyncio.gather(
        *(recorder.record(configmap, type="Normal", reason="Busy", message="m") for _ in range(5))
    )
    (event,) = await events_about(client, configmap, configmap["metadata"]["namespace"])
    assert event["count"] == 5


async def test_an_expired_event_is_created_anew(
    client: Client, recorder: EventRecorder, configmap: Object
) -> None:
    namespace = configmap["metadata"]["namespace"]
    await recorder.record(configmap, type="Normal", reason="Synced", message="m")
    (first,) = await events_about(client, configmap, namespace)
    await client.delete(EVENTS, first["metadata"]["name"], namespace)
    await recorder.record(configmap, type="Normal", reason="Synced", message="m")
    (second,) = await events_about(client, configmap, namespace)
    assert second["metadata"]["name"] != first["metadata"]["name"]
    assert second["count"] == 1


async def test_events_about_cluster_scoped_objects_go_to_default(
    client: Client, recorder: EventRecorder, namespace_object: Object
) -> None:
    await recorder.record(namespace_object, type="Normal", reason="Seen", message="m")
    (event,) = await events_about(client, namespace_object, "default")
    try:
        assert event["involvedObject"]["kind"] == "Namespace"
        assert "namespace" not in event["involvedObject"]
    finally:
        await client.delete(EVENTS, event["metadata"]["name"], "default")


async def test_failures_are_logged_not_raised(recorder: EventRecorder) -> None:
    ghost: Object = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ghost", "namespace": f"missing-{uuid.uuid4().hex[:8]}", "uid": "x"},
    }
    with capture_logs() as logs:
        await recorder.record(ghost, type="Warning", reason="Lost", message="m")
        await recorder.record(ghost, type="Warning", reason="Lost", message="m")
    failures = [log for log in logs if log["event"] == "recording event failed"]
    assert len(failures) == 2
    assert failures[0]["reason"] == "Lost"
    assert "NotFound" in failures[0]["error"]


async def test_forgotten_events_start_a_new_event(client: Client, configmap: Object) -> None:
    recorder = EventRecorder(client, component="test-controller", max_remembered=1)
    for reason in ("First", "Second", "First"):
        await recorder.record(configmap, type="Normal", reason=reason, message="m")
    events = await events_about(client, configmap, configmap["metadata"]["namespace"])
    assert [(event["reason"], event["count"]) for event in events] == [
        ("First", 1),
        ("First", 1),
        ("Second", 1),
    ]


async def test_the_kits_events_of_tells_same_named_objects_apart_by_kind(
    client: Client, recorder: EventRecorder, configmap: Object, namespace: str
) -> None:
    # A job and its Service share a name; Kubernetes' controllers report on the Service.
    meta = {"name": "subject", "namespace": namespace}
    service = await client.create(
        SERVICES,
        {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"clusterIP": "None"}},
    )
    await recorder.record(configmap, type="Normal", reason="Created", message="pods created")
    reason = "FailedToUpdateEndpointSlices"
    await recorder.record(service, type="Warning", reason=reason, message="failed to delete")

    assert await event_reasons(client, namespace, "subject", kind="ConfigMap") == ["Created"]
    about_both = await event_reasons(client, namespace, "subject")
    assert sorted(about_both) == ["Created", reason]
