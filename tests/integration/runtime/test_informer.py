"""The informer against a real API server: list+watch, scoping, indexers, recovery from 410."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from collections.abc import Callable
from typing import Any

import pytest

from jobcore import CONFIGMAPS
from jobcore import Client
from jobcore import Informer
from jobcore import Object
from jobcore import owner_reference
from jobcore.testing import ControlPlane
from jobcore.testing import api_requests
from jobcore.testing import background
from jobcore.testing import eventually

pytestmark = pytest.mark.integration


class Recorder:
    """Records every informer event as (type, name, resourceVersion)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.changed = asyncio.Event()

    def _note(self, kind: str, obj: Object) -> None:
        self.events.append((kind, obj["metadata"]["name"]))
        self.changed.set()

    def on_add(self, obj: Object) -> None:
        self._note("add", obj)

    def on_update(self, old: Object, new: Object) -> None:
        self._note("update", new)

    def on_delete(self, obj: Object) -> None:
        self._note("delete", obj)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


def configmap(namespace: str, name: str, labels: dict[str, str] | None = None) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": {"value": "1"},
    }


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[None]:
    async with background(informer.run()):
        async with asyncio.timeout(20):
            await informer.wait_for_sync()
        yield


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


async def test_lists_then_watches_each_change_once(
    client: Client, namespace: str, recorder: Recorder
) -> None:
    for i in range(3):
        await client.create(CONFIGMAPS, configmap(namespace, f"pre-{i}"))
    informer = Informer(client, CONFIGMAPS, namespace=namespace)
    informer.add_handler(recorder)
    async with running(informer):
        assert informer.has_synced()
        assert sorted(o["metadata"]["name"] for o in informer.list()) == ["pre-0", "pre-1", "pre-2"]
        await client.create(CONFIGMAPS, configmap(namespace, "new"))
        await client.patch(CONFIGMAPS, "new", {"data": {"value": "2"}}, namespace)
        await client.delete(CONFIGMAPS, "new", namespace)
        await recorder.wait_for(lambda: ("delete", "new") in recorder.events)
        assert [e for e in recorder.events if e[1] == "new"] == [
            ("add", "new"),
            ("update", "new"),
            ("delete", "new"),
        ]
        assert informer.get("new", namespace) is None
        cached = informer.get("pre-0", namespace)
        assert cached is not None
        assert cached["kind"] == "ConfigMap"
        assert "managedFields" not in cached["metadata"]


async def test_label_selector_scopes_the_cache(
    client: Client, namespace: str, recorder: Recorder
) -> None:
    await client.create(CONFIGMAPS, configmap(namespace, "mine", {"team": "a"}))
    await client.create(CONFIGMAPS, configmap(namespace, "theirs", {"team": "b"}))
    informer = Informer(client, CONFIGMAPS, namespace=namespace, label_selector="team=a")
    informer.add_handler(recorder)
    async with running(informer):
        assert [o["metadata"]["name"] for o in informer.list()] == ["mine"]
        await client.create(CONFIGMAPS, configmap(namespace, "also-theirs", {"team": "b"}))
        await client.create(CONFIGMAPS, configmap(namespace, "also-mine", {"team": "a"}))
        await recorder.wait_for(lambda: ("add", "also-mine") in recorder.events)
        assert {name for _, name in recorder.events} == {"mine", "also-mine"}


async def test_indexes_by_namespace_owner_and_custom_function(
    client: Client, namespace: str
) -> None:
    owner = await client.create(CONFIGMAPS, configmap(namespace, "owner"))
    child = configmap(namespace, "child", {"size": "big"})
    child["metadata"]["ownerReferences"] = [owner_reference(owner)]
    await client.create(CONFIGMAPS, child)
    informer = Informer(
        client,
        CONFIGMAPS,
        namespace=namespace,
        indexers={"size": lambda o: [o["metadata"].get("labels", {}).get("size", "none")]},
    )
    async with running(informer):
        owned = informer.controlled_by(namespace, owner["metadata"]["uid"])
        assert [o["metadata"]["name"] for o in owned] == ["child"]
        assert [o["metadata"]["name"] for o in informer.by_index("size", "big")] == ["child"]
        assert len(informer.by_index("namespace", namespace)) == 2
        assert informer.by_index("namespace", "elsewhere") == []


async def test_silent_watch_is_restarted_after_inactivity_timeout(
    client: Client, namespace: str, recorder: Recorder
) -> None:
    informer = Informer(client, CONFIGMAPS, namespace=namespace, inactivity_timeout=1.0)
    informer.add_handler(recorder)
    before = api_requests("WATCH")
    async with running(informer):
        # A silent watch is re-opened each second: the first watch and two re-opened ones.
        await eventually(lambda: api_requests("WATCH") - before >= 3, timeout=10)
        await client.create(CONFIGMAPS, configmap(namespace, "after-silence"))
        await recorder.wait_for(lambda: ("add", "after-silence") in recorder.events)


async def test_recovers_from_410_without_losing_a_delete(
    client: Client, namespace: str, recorder: Recorder, control_plane: Any
) -> None:
    if not isinstance(control_plane, ControlPlane):
        pytest.skip("needs the envtest control plane to restart the API server")
    for name in ("keep", "doomed"):
        await client.create(CONFIGMAPS, configmap(namespace, name))
    informer = Informer(client, CONFIGMAPS, namespace=namespace, max_backoff=0.5)
    informer.add_handler(recorder)
    async with running(informer):
        stale = informer.resource_version
        await control_plane.stop_apiserver()
        # Delete behind the API server's back, then compact history: the informer's
        # resourceVersion can no longer be watched from and the delete is never streamed.
        await control_plane.etcd_delete(f"/registry/configmaps/{namespace}/doomed")
        await control_plane.etcd_compact()
        await control_plane.start_apiserver()
        await client.create(CONFIGMAPS, configmap(namespace, "after"))
        await recorder.wait_for(lambda: ("add", "after") in recorder.events, timeout=60)
        await recorder.wait_for(lambda: ("delete", "doomed") in recorder.events, timeout=60)
        assert informer.resource_version != stale
        assert recorder.events.count(("delete", "doomed")) == 1
        assert recorder.events.count(("add", "keep")) == 1, "relist must not re-add known objects"
        assert informer.get("doomed", namespace) is None
        assert informer.get("keep", namespace) is not None
