"""Unit tests for the informer's store: events, relist diffs, indices, handlers, strip_bulk,
shared parts.

No API server: the store is handed the watch events and lists a list/watch would deliver,
through the same public methods (`apply`, `admit`, `replace`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import pytest

from jobcore._runtime.filing import CONTROLLER_UID_INDEX
from jobcore._runtime.filing import NAMESPACE_INDEX
from jobcore._runtime.filing import IndexFunc
from jobcore._runtime.filing import index_by_controller_uid
from jobcore._runtime.filing import index_by_namespace
from jobcore._runtime.filing import strip_bulk
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore._runtime.store import Store

Event = tuple[Any, ...]


class Recorder:
    """An event handler that records every call as ("add"|"update"|"delete", name, rv...)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def on_add(self, obj: Object) -> None:
        self.events.append(("add", key_of(obj), rv(obj)))

    def on_update(self, old: Object, new: Object) -> None:
        self.events.append(("update", key_of(new), rv(old), rv(new)))

    def on_delete(self, obj: Object) -> None:
        self.events.append(("delete", key_of(obj), rv(obj)))

    def take(self) -> list[Event]:
        events, self.events = self.events, []
        return events


class Exploding:
    """An event handler that fails on every call."""

    def __init__(self) -> None:
        self.calls = 0

    def on_add(self, obj: Object) -> None:
        self.calls += 1
        raise RuntimeError("add failed")

    def on_update(self, old: Object, new: Object) -> None:
        self.calls += 1
        raise RuntimeError("update failed")

    def on_delete(self, obj: Object) -> None:
        self.calls += 1
        raise RuntimeError("delete failed")


def key_of(obj: Object) -> str:
    return str(ObjectKey.of(obj))


def rv(obj: Object) -> str:
    return str(obj["metadata"]["resourceVersion"])


def pod(
    name: str,
    resource_version: int | str,
    namespace: str = "default",
    *,
    uid: str | None = None,
    owner_uid: str | None = None,
    labels: dict[str, str] | None = None,
    **extra: Any,
) -> Object:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "resourceVersion": str(resource_version),
    }
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Owner", "name": "o", "uid": owner_uid, "controller": True}
        ]
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, **extra}


def by_app(obj: Object) -> Iterable[str]:
    app = (obj["metadata"].get("labels") or {}).get("app")
    return (app,) if app else ()


def make_store(**kwargs: Any) -> tuple[Store, Recorder]:
    store = Store(PODS, **kwargs)
    recorder = Recorder()
    store.add_handler(recorder)
    return store, recorder


def names(objects: Iterable[Object]) -> list[str]:
    return sorted(key_of(obj) for obj in objects)


def relist(store: Store, items: Iterable[Object]) -> None:
    """Replace the store's objects with `items`, as a list/watch does with a full list."""
    admitted = (store.admit(obj) for obj in items)
    store.replace({ObjectKey.of(obj): obj for obj in admitted if obj is not None})


def assert_indices_consistent(store: Store, **indexers: IndexFunc) -> None:
    """Every index (the default ones and `indexers`) files exactly the cached objects its
    function gives, under no other value."""
    defaults = {NAMESPACE_INDEX: index_by_namespace, CONTROLLER_UID_INDEX: index_by_controller_uid}
    for index_name, func in {**defaults, **indexers}.items():
        expected: dict[str, list[Object]] = {}
        for obj in store.list():
            for value in func(obj):
                expected.setdefault(value, []).append(obj)
        assert sorted(store.index_values(index_name)) == sorted(expected), index_name
        for value, objects in expected.items():
            assert names(store.by_index(index_name, value)) == names(objects), index_name


# --- events -------------------------------------------------------------------------------------


def test_add_update_delete_are_each_reported_exactly_once() -> None:
    store, recorder = make_store()
    store.apply("ADDED", pod("a", 1))
    assert recorder.take() == [("add", "default/a", "1")]
    store.apply("ADDED", pod("a", 2))
    assert recorder.take() == [("update", "default/a", "1", "2")]
    store.apply("DELETED", pod("a", 2))
    assert recorder.take() == [("delete", "default/a", "2")]
    assert store.get("a", "default") is None
    assert len(store) == 0


def test_delete_reports_the_final_state() -> None:
    store, recorder = make_store()
    store.apply("ADDED", pod("a", 1))
    recorder.take()
    store.apply("DELETED", pod("a", 7))
    assert recorder.take() == [("delete", "default/a", "7")]


def test_same_resource_version_is_not_an_event() -> None:
    store, recorder = make_store()
    store.apply("ADDED", pod("a", 1))
    recorder.take()
    store.apply("ADDED", pod("a", 1, spec={"changed": True}))
    assert recorder.take() == []
    assert "spec" not in store.get("a", "default")  # type: ignore[operator]


def test_deleting_an_unknown_object_is_not_an_event() -> None:
    store, recorder = make_store()
    store.apply("DELETED", pod("ghost", 1))
    store.apply("ADDED", pod("a", 1))
    store.apply("DELETED", pod("a", 3))
    store.apply("DELETED", pod("a", 3))
    assert [event[0] for event in recorder.take()] == ["add", "delete"]


def test_uid_change_under_the_same_name_is_a_delete_then_an_add() -> None:
    store, recorder = make_store()
    store.apply("ADDED", pod("a", 1, uid="first", owner_uid="owner-1"))
    recorder.take()
    store.apply("ADDED", pod("a", 5, uid="second", owner_uid="owner-2"))
    assert recorder.take() == [("delete", "default/a", "1"), ("add", "default/a", "5")]
    assert store.get("a", "default")["metadata"]["uid"] == "second"  # type: ignore[index]
    assert store.controlled_by("default", "owner-1") == []
    assert names(store.controlled_by("default", "owner-2")) == ["default/a"]
    assert_indices_consistent(store)


def test_same_name_in_other_namespaces_are_distinct_objects() -> None:
    store, recorder = make_store()
    store.apply("ADDED", pod("a", 1, "ns1"))
    store.apply("ADDED", pod("a", 1, "ns2"))
    assert recorder.take() == [("add", "ns1/a", "1"), ("add", "ns2/a", "1")]
    assert len(store) == 2


# --- relist -------------------------------------------------------------------------------------


def test_replace_reports_only_the_differences() -> None:
    store, recorder = make_store()
    for name in ("keep", "change", "gone"):
        store.apply("ADDED", pod(name, 1))
    recorder.take()

    relist(store, [pod("keep", 1), pod("change", 2), pod("new", 3)])

    assert sorted(recorder.take()) == [
        ("add", "default/new", "3"),
        ("delete", "default/gone", "1"),
        ("update", "default/change", "1", "2"),
    ]
    assert names(store.list()) == ["default/change", "default/keep", "default/new"]
    assert rv(store.get("change", "default")) == "2"  # type: ignore[arg-type]
    assert_indices_consistent(store)


def test_replace_with_the_same_list_reports_nothing() -> None:
    store, recorder = make_store()
    items = [pod("a", 1), pod("b", 2, "other")]
    relist(store, items)
    assert sorted(recorder.take()) == [("add", "default/a", "1"), ("add", "other/b", "2")]
    relist(store, copy.deepcopy(items))
    assert recorder.take() == []


def test_replace_with_an_empty_list_deletes_everything() -> None:
    store, recorder = make_store()
    store.apply("ADDED", pod("a", 1))
    store.apply("ADDED", pod("b", 1, "ns2", owner_uid="o"))
    recorder.take()
    relist(store, [])
    assert sorted(recorder.take()) == [("delete", "default/a", "1"), ("delete", "ns2/b", "1")]
    assert store.list() == []
    assert store.by_index(NAMESPACE_INDEX, "ns2") == []
    assert store.controlled_by("default", "o") == []
    assert_indices_consistent(store)


def test_replace_reports_a_recreated_object_as_delete_then_add() -> None:
    store, recorder = make_store()
    store.apply("ADDED", pod("a", 1, uid="old"))
    recorder.take()
    relist(store, [pod("a", 9, uid="new")])
    assert recorder.take() == [("delete", "default/a", "1"), ("add", "default/a", "9")]


# --- reading and indices ------------------------------------------------------------------------


def test_get_and_list_by_namespace() -> None:
    store, _ = make_store()
    store.apply("ADDED", pod("a", 1, "ns1"))
    store.apply("ADDED", pod("b", 1, "ns1"))
    store.apply("ADDED", pod("c", 1, "ns2"))
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "uid": "u", "resourceVersion": "1"},
    }
    store.apply("ADDED", node)

    assert store.get("a", "ns1")["metadata"]["name"] == "a"  # type: ignore[index]
    assert store.get("a", "ns2") is None
    assert store.get("n") == node
    assert names(store.list()) == ["n", "ns1/a", "ns1/b", "ns2/c"]
    assert names(store.list("ns1")) == ["ns1/a", "ns1/b"]
    assert names(store.list("ns2")) == ["ns2/c"]
    assert store.list("empty") == []
    assert names(store.by_index(NAMESPACE_INDEX, "")) == ["n"]


def test_controller_uid_index_follows_owner_changes_and_deletions() -> None:
    store, _ = make_store()
    store.apply("ADDED", pod("a", 1, owner_uid="o1"))
    store.apply("ADDED", pod("b", 1, owner_uid="o1"))
    store.apply("ADDED", pod("c", 1))
    assert names(store.controlled_by("default", "o1")) == ["default/a", "default/b"]

    store.apply("ADDED", pod("a", 2, owner_uid="o2"))
    assert names(store.controlled_by("default", "o1")) == ["default/b"]
    assert names(store.controlled_by("default", "o2")) == ["default/a"]

    store.apply("ADDED", pod("b", 2))  # released by its owner
    assert store.controlled_by("default", "o1") == []
    empty = "default/o1"
    assert empty not in store.index_values(CONTROLLER_UID_INDEX), "empty values are dropped"

    store.apply("DELETED", pod("a", 3))
    assert store.controlled_by("default", "o2") == []
    assert_indices_consistent(store)


def test_custom_indexer_from_the_constructor() -> None:
    store, _ = make_store(indexers={"app": by_app})
    store.apply("ADDED", pod("a", 1, labels={"app": "web"}))
    store.apply("ADDED", pod("b", 1, "ns2", labels={"app": "web"}))
    store.apply("ADDED", pod("c", 1, labels={"app": "db"}))
    assert names(store.by_index("app", "web")) == ["default/a", "ns2/b"]

    store.apply("ADDED", pod("a", 2, labels={"app": "db"}))
    assert names(store.by_index("app", "web")) == ["ns2/b"]
    assert names(store.by_index("app", "db")) == ["default/a", "default/c"]

    store.apply("DELETED", pod("b", 2, "ns2"))
    assert store.by_index("app", "web") == []
    store.apply("ADDED", pod("c", 2))
    assert names(store.by_index("app", "db")) == ["default/a"]
    assert_indices_consistent(store)


def test_constructor_indexers_keep_the_default_ones() -> None:
    store, _ = make_store(indexers={"app": by_app})
    store.apply("ADDED", pod("a", 1, "ns1", owner_uid="o", labels={"app": "web"}))
    assert names(store.by_index(NAMESPACE_INDEX, "ns1")) == ["ns1/a"]
    assert names(store.controlled_by("ns1", "o")) == ["ns1/a"]


def test_add_indexer_indexes_existing_objects_and_later_changes() -> None:
    store, _ = make_store()
    store.apply("ADDED", pod("a", 1, labels={"app": "web"}))
    store.apply("ADDED", pod("b", 1, labels={"app": "db"}))
    store.apply("ADDED", pod("c", 1))

    store.add_indexer("app", by_app)
    assert names(store.by_index("app", "web")) == ["default/a"]
    assert names(store.by_index("app", "db")) == ["default/b"]

    store.apply("ADDED", pod("c", 2, labels={"app": "web"}))
    store.apply("ADDED", pod("a", 2, labels={"app": "db"}))
    assert names(store.by_index("app", "web")) == ["default/c"]
    assert names(store.by_index("app", "db")) == ["default/a", "default/b"]

    store.apply("DELETED", pod("b", 2))
    relist(store, [pod("a", 2, labels={"app": "db"})])
    assert names(store.by_index("app", "db")) == ["default/a"]
    assert store.by_index("app", "web") == []
    assert_indices_consistent(store)


def test_an_index_name_keeps_its_function() -> None:
    store, _ = make_store(indexers={"app": by_app})
    store.add_indexer("app", by_app)  # the same index again: nothing changes

    with pytest.raises(ValueError, match="already has an index 'app'"):
        store.add_indexer("app", lambda obj: ())
    store.apply("ADDED", pod("a", 1, labels={"app": "web"}))
    assert names(store.by_index("app", "web")) == ["default/a"]


def test_indexer_with_several_values_per_object() -> None:
    def by_container(obj: Object) -> Iterable[str]:
        return [c["image"] for c in obj.get("spec", {}).get("containers", [])]

    store, _ = make_store(indexers={"image": by_container})
    store.apply("ADDED", pod("a", 1, spec={"containers": [{"image": "x"}, {"image": "y"}]}))
    store.apply("ADDED", pod("b", 1, spec={"containers": [{"image": "y"}]}))
    assert names(store.by_index("image", "y")) == ["default/a", "default/b"]
    store.apply("ADDED", pod("a", 2, spec={"containers": [{"image": "z"}]}))
    assert store.by_index("image", "x") == []
    assert names(store.by_index("image", "y")) == ["default/b"]
    assert names(store.by_index("image", "z")) == ["default/a"]
    assert_indices_consistent(store)


# --- handlers -----------------------------------------------------------------------------------


def test_handler_added_before_sync_is_not_replayed() -> None:
    store, _ = make_store()
    store.apply("ADDED", pod("a", 1))
    late = Recorder()
    store.add_handler(late)
    assert late.events == []
    store.apply("ADDED", pod("a", 2))
    assert late.events == [("update", "default/a", "1", "2")]


def test_handler_added_after_sync_is_replayed_the_cache() -> None:
    store, first = make_store()
    assert not store.has_synced()
    relist(store, [pod("a", 1), pod("b", 2, "ns2")])
    assert store.has_synced()
    first.take()

    late = Recorder()
    store.add_handler(late)
    assert sorted(late.take()) == [("add", "default/a", "1"), ("add", "ns2/b", "2")]
    assert first.take() == [], "earlier handlers are not told again"

    store.apply("ADDED", pod("a", 3))
    assert late.take() == [("update", "default/a", "1", "3")]
    assert first.take() == [("update", "default/a", "1", "3")]


def test_a_failing_handler_does_not_stop_the_others() -> None:
    store = Store(PODS)
    exploding, recorder = Exploding(), Recorder()
    store.add_handler(exploding)
    store.add_handler(recorder)

    store.apply("ADDED", pod("a", 1))
    store.apply("ADDED", pod("a", 2))
    store.apply("DELETED", pod("a", 3))
    assert exploding.calls == 3
    assert [event[0] for event in recorder.take()] == ["add", "update", "delete"]
    assert len(store) == 0

    relist(store, [pod("b", 1)])
    replayed = Exploding()
    store.add_handler(replayed)  # must not raise
    assert replayed.calls == 1
    store.apply("ADDED", pod("b", 2))
    assert recorder.take() == [("add", "default/b", "1"), ("update", "default/b", "1", "2")]


# --- strip_bulk ---------------------------------------------------------------------------------


def test_strip_bulk_drops_managed_fields_and_last_applied_only() -> None:
    last_applied = "kubectl.kubernetes.io/last-applied-configuration"
    original = pod(
        "a",
        1,
        labels={"app": "web"},
        spec={"containers": [{"name": "main", "image": "img:" + "x" * 100, "args": ["a", "b"]}]},
        status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    )
    original["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]
    original["metadata"]["annotations"] = {last_applied: '{"big": "json"}', "keep": "me"}
    expected = copy.deepcopy(original)
    del expected["metadata"]["managedFields"]
    del expected["metadata"]["annotations"][last_applied]

    assert strip_bulk(original) == expected


def test_strip_bulk_leaves_objects_without_bulk_fields_equal() -> None:
    original = pod("a", 1, spec={"nodeName": "n1", "priority": 5, "ok": True, "none": None})
    expected = copy.deepcopy(original)
    assert strip_bulk(original) == expected
    assert strip_bulk({"kind": "Status"}) == {"kind": "Status"}
    bare = pod("b", 1)
    bare["metadata"]["annotations"] = {}
    assert strip_bulk(copy.deepcopy(bare)) == bare


# --- shared parts -------------------------------------------------------------------------------


def test_an_update_is_cached_with_its_previous_versions_unchanged_parts() -> None:
    store, recorder = make_store()
    spec = {"containers": [{"name": "main", "image": "img"}]}
    store.apply("ADDED", pod("a", 1, spec=copy.deepcopy(spec)))
    before = store.get("a", "default")
    store.apply("ADDED", pod("a", 2, spec=copy.deepcopy(spec), status={"phase": "Running"}))
    after = store.get("a", "default")
    assert before is not None and after is not None
    assert after == pod("a", 2, spec=spec, status={"phase": "Running"})
    assert after["spec"] is before["spec"]
    assert recorder.take() == [("add", "default/a", "1"), ("update", "default/a", "1", "2")]


def test_a_new_object_is_cached_with_a_siblings_equal_parts() -> None:
    store, _ = make_store()
    # A script too long for the table of shared parts: only the sibling can share it.
    containers = [{"name": "main", "image": "img", "args": ["echo " + "x" * 1000]}]

    def worker(name: str) -> Object:
        spec = {"hostname": name, "containers": copy.deepcopy(containers)}
        return pod(name, 1, owner_uid="job-1", spec=spec)

    for name in ("w-0", "w-1"):
        store.apply("ADDED", worker(name))
    first, second = store.get("w-0", "default"), store.get("w-1", "default")
    assert first is not None and second is not None
    assert second == worker("w-1")
    assert second["spec"]["containers"] is first["spec"]["containers"]
    assert second["metadata"]["ownerReferences"] is first["metadata"]["ownerReferences"]


def test_without_share_parts_objects_are_cached_as_transformed() -> None:
    store, _ = make_store(share_parts=False, transform=None)
    raw = pod("a", 1, spec={"containers": [{"name": "main"}]})
    assert store.admit(raw) is raw
