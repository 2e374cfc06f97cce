"""Unit tests for the Informer's `keep`: what it refuses is never cached, indexed or reported,
and a shared informer keeps what any of its users asks for.

No API server: watch events are handed to the store as a watch would deliver them (the list
and relist are tested with a scripted lister/watcher in tests/unit/runtime/test_listwatch.py, and
against a real server in tests/integration/runtime/test_cache_memory.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import Informer
from jobcore import Manager
from jobcore import Object
from jobcore import controller_of
from tests.unit.runtime.test_informer_store import assert_indices_consistent
from tests.unit.runtime.test_informer_store import make_store
from tests.unit.runtime.test_informer_store import pod


def owned(obj: Object) -> bool:
    return controller_of(obj) is not None


def labelled_web(obj: Object) -> bool:
    return (obj["metadata"].get("labels") or {}).get("app") == "web"


def test_a_refused_object_is_neither_transformed_cached_indexed_nor_reported() -> None:
    transformed: list[str] = []

    def transform(obj: Object) -> Object:
        transformed.append(obj["metadata"]["name"])
        return obj

    store, recorder = make_store(keep=owned, transform=transform)
    store.apply("ADDED", pod("foreign", 1, labels={"app": "x"}))
    store.apply("MODIFIED", pod("foreign", 2, labels={"app": "x"}))
    store.apply("ADDED", pod("child", 3, owner_uid="job"))

    assert recorder.take() == [("add", "default/child", "3")]
    assert [o["metadata"]["name"] for o in store.list()] == ["child"]
    assert store.get("foreign", "default") is None
    assert transformed == ["child"]
    assert_indices_consistent(store)


def test_an_object_that_stops_being_kept_is_deleted_and_one_that_starts_is_added() -> None:
    store, recorder = make_store(keep=owned)
    store.apply("ADDED", pod("a", 1, owner_uid="job"))
    store.apply("MODIFIED", pod("a", 2))  # released by its owner
    assert recorder.take() == [("add", "default/a", "1"), ("delete", "default/a", "1")]
    assert store.get("a", "default") is None
    assert store.controlled_by("default", "job") == []

    store.apply("MODIFIED", pod("a", 3, owner_uid="job"))  # adopted
    assert recorder.take() == [("add", "default/a", "3")]
    assert [o["metadata"]["name"] for o in store.controlled_by("default", "job")] == ["a"]
    assert_indices_consistent(store)


def test_deletions_report_only_objects_that_were_kept() -> None:
    store, recorder = make_store(keep=owned)
    store.apply("ADDED", pod("child", 1, owner_uid="job"))
    store.apply("ADDED", pod("foreign", 2))
    recorder.take()
    store.apply("DELETED", pod("foreign", 3))
    store.apply("DELETED", pod("child", 4, owner_uid="job"))
    assert recorder.take() == [("delete", "default/child", "4")]
    assert len(store) == 0


def test_a_kept_object_deleted_in_a_refused_state_is_reported_as_cached() -> None:
    store, recorder = make_store(keep=owned)
    store.apply("ADDED", pod("child", 1, owner_uid="job"))
    store.apply("DELETED", pod("child", 2))
    assert recorder.take() == [("add", "default/child", "1"), ("delete", "default/child", "1")]


def test_keep_also_widens_to_what_either_accepts() -> None:
    store, recorder = make_store(keep=owned)
    store.keep_also(labelled_web)
    store.keep_also(owned)  # already kept: nothing changes
    store.apply("ADDED", pod("child", 1, owner_uid="job"))
    store.apply("ADDED", pod("web", 2, labels={"app": "web"}))
    store.apply("ADDED", pod("db", 3, labels={"app": "db"}))
    assert [event[1] for event in recorder.take()] == ["default/child", "default/web"]

    store.keep_also(None)
    store.apply("ADDED", pod("db", 4, labels={"app": "db"}))
    assert recorder.take() == [("add", "default/db", "4")]


async def test_keep_also_refuses_to_widen_a_running_informer() -> None:
    informer = Informer(None, PODS, keep=owned, max_backoff=0.01)  # type: ignore[arg-type]
    run = asyncio.create_task(informer.run())  # without a client, it lists and fails again
    await asyncio.sleep(0)
    try:
        informer.keep_also(owned)  # no wider: allowed
        with pytest.raises(RuntimeError, match="too late to widen"):
            informer.keep_also(labelled_web)
        with pytest.raises(RuntimeError, match="too late to widen"):
            informer.keep_also(None)
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)


def test_the_manager_shares_one_informer_that_keeps_what_any_caller_asked_for() -> None:
    manager = Manager(None, metrics_address=None, health_address=None)  # type: ignore[arg-type]
    scope: dict[str, Any] = {"namespace": "default", "label_selector": "app"}
    first = manager.informer(PODS, **scope, keep=owned)
    assert manager.informer(PODS, **scope, keep=labelled_web) is first
    assert manager.informer(CONFIGMAPS, **scope, keep=owned) is not first
    first.apply("ADDED", pod("child", 1, owner_uid="job"))
    first.apply("ADDED", pod("web", 2, labels={"app": "web"}))
    first.apply("ADDED", pod("db", 3, labels={"app": "db"}))
    assert sorted(o["metadata"]["name"] for o in first.list()) == ["child", "web"]

    assert manager.informer(PODS, **scope) is first  # a caller that wants every object
    first.apply("MODIFIED", pod("db", 4, labels={"app": "db"}))
    assert sorted(o["metadata"]["name"] for o in first.list()) == ["child", "db", "web"]
