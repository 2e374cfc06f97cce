"""The client against a real API server: CRUD, server-side apply, status, errors."""

from __future__ import annotations

import asyncio

import pytest

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import AlreadyExistsError
from jobcore import ApiError
from jobcore import Client
from jobcore import ConflictError
from jobcore import InvalidError
from jobcore import NotFoundError
from jobcore.jobs import crd_for
from jobcore.testing import api_requests
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobkinds.mpijob import MPIJobKind
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration


def configmap(namespace: str, name: str, **data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


async def test_create_get_list_update_patch_delete(client: Client, namespace: str) -> None:
    created = await client.create(CONFIGMAPS, configmap(namespace, "a", k="1"))
    assert created["metadata"]["uid"]
    assert (await client.get(CONFIGMAPS, "a", namespace))["data"] == {"k": "1"}
    created["data"]["k"] = "2"
    updated = await client.update(CONFIGMAPS, created)
    assert updated["data"] == {"k": "2"}
    patched = await client.patch(CONFIGMAPS, "a", {"data": {"j": "3"}}, namespace)
    assert patched["data"] == {"k": "2", "j": "3"}
    json_patched = await client.patch(
        CONFIGMAPS, "a", [{"op": "remove", "path": "/data/k"}], namespace, patch_type="json"
    )
    assert json_patched["data"] == {"j": "3"}
    for i in range(3):
        await client.create(CONFIGMAPS, configmap(namespace, f"page-{i}"))
    first = await client.list(CONFIGMAPS, namespace, limit=2)
    assert len(first["items"]) == 2 and first["metadata"]["continue"]
    rest = await client.list(CONFIGMAPS, namespace, continue_token=first["metadata"]["continue"])
    names = {o["metadata"]["name"] for o in first["items"] + rest["items"]}
    assert {"a", "page-0", "page-1", "page-2"} <= names
    await client.delete(CONFIGMAPS, "a", namespace)
    with pytest.raises(NotFoundError):
        await client.get(CONFIGMAPS, "a", namespace)


async def test_errors_are_typed_and_conflicts_reach_the_caller(
    client: Client, namespace: str
) -> None:
    stale = await client.create(CONFIGMAPS, configmap(namespace, "c", k="1"))
    with pytest.raises(AlreadyExistsError):
        await client.create(CONFIGMAPS, configmap(namespace, "c"))
    await client.patch(CONFIGMAPS, "c", {"data": {"k": "2"}}, namespace)
    with pytest.raises(ConflictError) as conflict:
        await client.update(CONFIGMAPS, stale)
    assert conflict.value.status == 409
    with pytest.raises(InvalidError) as invalid:
        await client.create(CONFIGMAPS, configmap(namespace, "Not_A_Valid_Name"))
    assert "Not_A_Valid_Name" in invalid.value.message
    with pytest.raises(NotFoundError):
        await client.delete(CONFIGMAPS, "missing", namespace)
    with pytest.raises(ConflictError):
        await client.delete(CONFIGMAPS, "c", namespace, uid="00000000-0000-0000-0000-000000000000")


async def test_server_side_apply_owns_fields_per_manager(
    client: Client, namespace: str, kubeconfig_path: str
) -> None:
    applied = await client.apply(CONFIGMAPS, configmap(namespace, "ssa", owned="mine"))
    assert applied["data"] == {"owned": "mine"}
    managers = {entry["manager"] for entry in applied["metadata"]["managedFields"]}
    assert client.field_manager in managers
    async with await Client.from_kubeconfig(kubeconfig_path, field_manager="other") as other:
        with pytest.raises(ConflictError):
            await other.apply(CONFIGMAPS, configmap(namespace, "ssa", owned="theirs"))
        forced = await other.apply(
            CONFIGMAPS, configmap(namespace, "ssa", owned="theirs"), force=True
        )
    assert forced["data"] == {"owned": "theirs"}


async def test_status_subresource_is_written_apart_from_spec(
    client: Client, namespace: str
) -> None:
    await install_crd(client, crd_for(MPIJobKind()))
    job = await client.create(MPIJOBS, mpijob(namespace, "s", replicas=1))
    job["status"] = {"phase": "Running"}
    job["spec"]["worker"]["replicas"] = 5
    written = await client.update_status(MPIJOBS, job)
    assert written["status"]["phase"] == "Running"
    assert written["spec"]["worker"]["replicas"] == 1, "a status write must not change the spec"
    assert written["metadata"]["generation"] == 1
    patched = await client.patch(
        MPIJOBS, "s", {"status": {"phase": "Succeeded"}}, namespace, subresource="status"
    )
    assert patched["status"]["phase"] == "Succeeded"


async def test_watch_streams_changes_from_a_resource_version(
    client: Client, namespace: str
) -> None:
    listed = await client.list(PODS, namespace)
    await client.create(CONFIGMAPS, configmap(namespace, "w"))
    events = []
    async for event_type, obj in client.watch(
        CONFIGMAPS,
        namespace,
        resource_version=listed["metadata"]["resourceVersion"],
        timeout_seconds=1,
        allow_bookmarks=True,
    ):
        events.append((event_type, obj["metadata"].get("name")))
    assert ("ADDED", "w") in events


async def test_a_watch_the_server_refuses_raises_its_error(client: Client, namespace: str) -> None:
    """Raised, not an empty stream, which its caller would take for a watch that ended."""
    with pytest.raises(ApiError) as refused:
        async for _ in client.watch(
            CONFIGMAPS, namespace, label_selector="a in (", timeout_seconds=1
        ):
            pass
    assert (refused.value.status, refused.value.reason) == (400, "BadRequest"), refused.value


async def test_max_connections_bounds_the_requests_in_flight(
    kubeconfig_path: str, namespace: str
) -> None:
    async with await Client.from_kubeconfig(kubeconfig_path, max_connections=1) as client:

        async def watch() -> None:
            async for _ in client.watch(CONFIGMAPS, namespace, timeout_seconds=2):
                pass

        watches = api_requests("WATCH")
        watching = asyncio.create_task(watch())
        # Counted once its answer has come: from then on the watch holds the only connection.
        await eventually(lambda: api_requests("WATCH") > watches)
        await client.list(CONFIGMAPS, namespace)
        assert watching.done(), "the list had to wait for the watch's connection"
        await watching

    with pytest.raises(ValueError, match="max_connections must be at least 1"):
        await Client.from_kubeconfig(kubeconfig_path, max_connections=0)
