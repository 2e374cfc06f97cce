"""Unit tests for the Informer's cache: events, relist diffs, indices, handlers, strip_bulk,
shared parts.

No API server: the informer is built without a client and its store methods are called
directly with the objects a list or watch would have delivered.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import pytest

from jobcore._runtime.filing import CONTROLLER_UID_INDEX
from jobcore._runtime.filing import NAMESPACE_INDEX
from jobcore._runtime.filing import strip_bulk
from jobcore._runtime.informer import Informer
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey

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


def make_informer(**kwargs: Any) -> tuple[Informer, Recorder]:
    informer = Informer(None, PODS, **kwargs)  # type: ignore[arg-type]
    recorder = Recorder()
    informer.add_handler(recorder)
    return informer, recorder


def names(objects: Iterable[Object]) -> list[str]:
    return sorted(key_of(obj) for obj in objects)


def keys(items: Iterable[Object]) -> dict[ObjectKey, Object]:
    return {ObjectKey.of(obj): obj for obj in items}


def assert_indices_consistent(informer: Informer) -> None:
    """Every index holds exactly what re-indexing the cached objects from scratch would give."""
    for index_name, func in informer._indexers.items():
        expected: dict[str, set[ObjectKey]] = {}
        for key, obj in informer._store.items():
            for value in func(obj):
                expected.setdefault(value, set()).add(key)
        assert informer._indices[index_name] == expected, index_name


# --- events -------------------------------------------------------------------------------------


def test_add_update_delete_are_each_reported_exactly_once() -> None:
    informer, recorder = make_informer()
    informer._upsert(pod("a", 1))
    assert recorder.take() == [("add", "default/a", "1")]
    informer._upsert(pod("a", 2))
    assert recorder.take() == [("update", "default/a", "1", "2")]
    informer._remove(ObjectKey("default", "a"))
    assert recorder.take() == [("delete", "default/a", "2")]
    assert informer.get("a", "default") is None
    assert len(informer) == 0


def test_delete_reports_the_final_state_when_given() -> None:
    informer, recorder = make_informer()
    informer._upsert(pod("a", 1))
    recorder.take()
    informer._remove(ObjectKey("default", "a"), pod("a", 7))
    assert recorder.take() == [("delete", "default/a", "7")]


def test_same_resource_version_is_not_an_event() -> None:
    informer, recorder = make_informer()
    informer._upsert(pod("a", 1))
    recorder.take()
    informer._upsert(pod("a", 1, spec={"changed": True}))
    assert recorder.take() == []
    assert "spec" not in informer.get("a", "default")  # type: ignore[operator]


def test_removing_an_unknown_key_is_not_an_event() -> None:
    informer, recorder = make_informer()
    informer._remove(ObjectKey("default", "ghost"))
    informer._upsert(pod("a", 1))
    informer._remove(ObjectKey("default", "a"))
    informer._remove(ObjectKey("default", "a"))
    assert [event[0] for event in recorder.take()] == ["add", "delete"]


def test_uid_change_under_the_same_name_is_a_delete_then_an_add() -> None:
    informer, recorder = make_informer()
    informer._upsert(pod("a", 1, uid="first", owner_uid="owner-1"))
    recorder.take()
    informer._upsert(pod("a", 5, uid="second", owner_uid="owner-2"))
    assert recorder.take() == [("delete", "default/a", "1"), ("add", "default/a", "5")]
    assert informer.get("a", "default")["metadata"]["uid"] == "second"  # type: ignore[index]
    assert informer.controlled_by("default", "owner-1") == []
    assert names(informer.controlled_by("default", "owner-2")) == ["default/a"]
    assert_indices_consistent(informer)


def test_same_name_in_other_namespaces_are_distinct_objects() -> None:
    informer, recorder = make_informer()
    informer._upsert(pod("a", 1, "ns1"))
    informer._upsert(pod("a", 1, "ns2"))
    assert recorder.take() == [("add", "ns1/a", "1"), ("add", "ns2/a", "1")]
    assert len(informer) == 2


# --- relist -------------------------------------------------------------------------------------


def test_replace_reports_only_the_differences() -> None:
    informer, recorder = make_informer()
    for name in ("keep", "change", "gone"):
        informer._upsert(pod(name, 1))
    recorder.take()

    informer._replace(keys([pod("keep", 1), pod("change", 2), pod("new", 3)]))

    assert sorted(recorder.take()) == [
        ("add", "default/new", "3"),
        ("delete", "default/gone", "1"),
        ("update", "default/change", "1", "2"),
    ]
    assert names(informer.list()) == ["default/change", "default/keep", "default/new"]
    assert rv(informer.get("change", "default")) == "2"  # type: ignore[arg-type]
    assert_indices_consistent(informer)


def test_replace_with_the_same_list_reports_nothing() -> None:
    informer, recorder = make_informer()
    items = [pod("a", 1), pod("b", 2, "other")]
    informer._replace(keys(items))
    assert sorted(recorder.take()) == [("add", "default/a", "1"), ("add", "other/b", "2")]
    informer._replace(keys(copy.deepcopy(items)))
    assert recorder.take() == []


def test_replace_with_an_empty_list_deletes_everything() -> None:
    informer, recorder = make_informer()
    informer._upsert(pod("a", 1))
    informer._upsert(pod("b", 1, "ns2", owner_uid="o"))
    recorder.take()
    informer._replace({})
    assert sorted(recorder.take()) == [("delete", "default/a", "1"), ("delete", "ns2/b", "1")]
    assert informer.list() == []
    assert informer.by_index(NAMESPACE_INDEX, "ns2") == []
    assert informer.controlled_by("default", "o") == []
    assert_indices_consistent(informer)


def test_replace_reports_a_recreated_object_as_delete_then_add() -> None:
    informer, recorder = make_informer()
    informer._upsert(pod("a", 1, uid="old"))
    recorder.take()
    informer._replace(keys([pod("a", 9, uid="new")]))
    assert recorder.take() == [("delete", "default/a", "1"), ("add", "default/a", "9")]


# --- reading and indices ------------------------------------------------------------------------


def test_get_and_list_by_namespace() -> None:
    informer, _ = make_informer()
    informer._upsert(pod("a", 1, "ns1"))
    informer._upsert(pod("b", 1, "ns1"))
    informer._upsert(pod("c", 1, "ns2"))
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "uid": "u", "resourceVersion": "1"},
    }
    informer._upsert(node)

    assert informer.get("a", "ns1")["metadata"]["name"] == "a"  # type: ignore[index]
    assert informer.get("a", "ns2") is None
    assert informer.get("n") is node
    assert names(informer.list()) == ["n", "ns1/a", "ns1/b", "ns2/c"]
    assert names(informer.list("ns1")) == ["ns1/a", "ns1/b"]
    assert names(informer.list("ns2")) == ["ns2/c"]
    assert informer.list("empty") == []
    assert names(informer.by_index(NAMESPACE_INDEX, "")) == ["n"]


def test_controller_uid_index_follows_owner_changes_and_deletions() -> None:
    informer, _ = make_informer()
    informer._upsert(pod("a", 1, owner_uid="o1"))
    informer._upsert(pod("b", 1, owner_uid="o1"))
    informer._upsert(pod("c", 1))
    assert names(informer.controlled_by("default", "o1")) == ["default/a", "default/b"]

    informer._upsert(pod("a", 2, owner_uid="o2"))
    assert names(informer.controlled_by("default", "o1")) == ["default/b"]
    assert names(informer.controlled_by("default", "o2")) == ["default/a"]

    informer._upsert(pod("b", 2))  # released by its owner
    assert informer.controlled_by("default", "o1") == []
    empty = "default/o1"
    assert empty not in informer._indices[CONTROLLER_UID_INDEX], "empty index values are dropped"

    informer._remove(ObjectKey("default", "a"))
    assert informer.controlled_by("default", "o2") == []
    assert_indices_consistent(informer)


def test_custom_indexer_from_the_constructor() -> None:
    informer, _ = make_informer(indexers={"app": by_app})
    informer._upsert(pod("a", 1, labels={"app": "web"}))
    informer._upsert(pod("b", 1, "ns2", labels={"app": "web"}))
    informer._upsert(pod("c", 1, labels={"app": "db"}))
    assert names(informer.by_index("app", "web")) == ["default/a", "ns2/b"]

    informer._upsert(pod("a", 2, labels={"app": "db"}))
    assert names(informer.by_index("app", "web")) == ["ns2/b"]
    assert names(informer.by_index("app", "db")) == ["default/a", "default/c"]

    informer._remove(ObjectKey("ns2", "b"))
    assert informer.by_index("app", "web") == []
    informer._upsert(pod("c", 2))
    assert names(informer.by_index("app", "db")) == ["default/a"]
    assert_indices_consistent(informer)


def test_constructor_indexers_keep_the_default_ones() -> None:
    informer, _ = make_informer(indexers={"app": by_app})
    informer._upsert(pod("a", 1, "ns1", owner_uid="o", labels={"app": "web"}))
    assert names(informer.by_index(NAMESPACE_INDEX, "ns1")) == ["ns1/a"]
    assert names(informer.controlled_by("ns1", "o")) == ["ns1/a"]


def test_add_indexer_indexes_existing_objects_and_later_changes() -> None:
    informer, _ = make_informer()
    informer._upsert(pod("a", 1, labels={"app": "web"}))
    informer._upsert(pod("b", 1, labels={"app": "db"}))
    informer._upsert(pod("c", 1))

    informer.add_indexer("app", by_app)
    assert names(informer.by_index("app", "web")) == ["default/a"]
    assert names(informer.by_index("app", "db")) == ["default/b"]

    informer._upsert(pod("c", 2, labels={"app": "web"}))
    informer._upsert(pod("a", 2, labels={"app": "db"}))
    assert names(informer.by_index("app", "web")) == ["default/c"]
    assert names(informer.by_index("app", "db")) == ["default/a", "default/b"]

    informer._remove(ObjectKey("default", "b"))
    informer._replace(keys([pod("a", 2, labels={"app": "db"})]))
    assert names(informer.by_index("app", "db")) == ["default/a"]
    assert informer.by_index("app", "web") == []
    assert_indices_consistent(informer)


def test_an_index_name_keeps_its_function() -> None:
    informer, _ = make_informer(indexers={"app": by_app})
    informer.add_indexer("app", by_app)  # the same index again: nothing changes

    with pytest.raises(ValueError, match="already has an index 'app'"):
        informer.add_indexer("app", lambda obj: ())
    informer._upsert(pod("a", 1, labels={"app": "web"}))
    assert names(informer.by_index("app", "web")) == ["default/a"]


def test_indexer_with_several_values_per_object() -> None:
    def by_container(obj: Object) -> Iterable[str]:
        return [c["image"] for c in obj.get("spec", {}).get("containers", [])]

    informer, _ = make_informer(indexers={"image": by_container})
    informer._upsert(pod("a", 1, spec={"containers": [{"image": "x"}, {"image": "y"}]}))
    informer._upsert(pod("b", 1, spec={"containers": [{"image": "y"}]}))
    assert names(informer.by_index("image", "y")) == ["default/a", "default/b"]
    informer._upsert(pod("a", 2, spec={"containers": [{"image": "z"}]}))
    assert informer.by_index("image", "x") == []
    assert names(informer.by_index("image", "y")) == ["default/b"]
    assert names(informer.by_index("image", "z")) == ["default/a"]
    assert_indices_consistent(informer)


# --- handlers -----------------------------------------------------------------------------------


def test_handler_added_before_sync_is_not_replayed() -> None:
    informer, _ = make_informer()
    informer._upsert(pod("a", 1))
    late = Recorder()
    informer.add_handler(late)
    assert late.events == []
    informer._upsert(pod("a", 2))
    assert late.events == [("update", "default/a", "1", "2")]


def test_handler_added_after_sync_is_replayed_the_cache() -> None:
    informer, first = make_informer()
    informer._replace(keys([pod("a", 1), pod("b", 2, "ns2")]))
    informer._synced.set()
    assert informer.has_synced()
    first.take()

    late = Recorder()
    informer.add_handler(late)
    assert sorted(late.take()) == [("add", "default/a", "1"), ("add", "ns2/b", "2")]
    assert first.take() == [], "earlier handlers are not told again"

    informer._upsert(pod("a", 3))
    assert late.take() == [("update", "default/a", "1", "3")]
    assert first.take() == [("update", "default/a", "1", "3")]


def test_a_failing_handler_does_not_stop_the_others() -> None:
    informer = Informer(None, PODS)  # type: ignore[arg-type]
    exploding, recorder = Exploding(), Recorder()
    informer.add_handler(exploding)
    informer.add_handler(recorder)

    informer._upsert(pod("a", 1))
    informer._upsert(pod("a", 2))
    informer._remove(ObjectKey("default", "a"))
    assert exploding.calls == 3
    assert [event[0] for event in recorder.take()] == ["add", "update", "delete"]
    assert len(informer) == 0

    informer._upsert(pod("b", 1))
    informer._synced.set()
    replayed = Exploding()
    informer.add_handler(replayed)  # must not raise
    assert replayed.calls == 1
    informer._upsert(pod("b", 2))
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
    informer, recorder = make_informer()
    spec = {"containers": [{"name": "main", "image": "img"}]}
    informer._upsert(informer._cacheable(pod("a", 1, spec=copy.deepcopy(spec))))
    before = informer.get("a", "default")
    informer._upsert(
        informer._cacheable(pod("a", 2, spec=copy.deepcopy(spec), status={"phase": "Running"}))
    )
    after = informer.get("a", "default")
    assert before is not None and after is not None
    assert after == pod("a", 2, spec=spec, status={"phase": "Running"})
    assert after["spec"] is before["spec"]
    assert recorder.take() == [("add", "default/a", "1"), ("update", "default/a", "1", "2")]


def test_a_new_object_is_cached_with_a_siblings_equal_parts() -> None:
    informer, _ = make_informer()
    # A script too long for the table of shared parts: only the sibling can share it.
    containers = [{"name": "main", "image": "img", "args": ["echo " + "x" * 1000]}]

    def worker(name: str) -> Object:
        spec = {"hostname": name, "containers": copy.deepcopy(containers)}
        return pod(name, 1, owner_uid="job-1", spec=spec)

    for name in ("w-0", "w-1"):
        informer._upsert(informer._cacheable(worker(name)))
    first, second = informer.get("w-0", "default"), informer.get("w-1", "default")
    assert first is not None and second is not None
    assert second == worker("w-1")
    assert second["spec"]["containers"] is first["spec"]["containers"]
    assert second["metadata"]["ownerReferences"] is first["metadata"]["ownerReferences"]


def test_without_share_parts_objects_are_cached_as_transformed() -> None:
    informer, _ = make_informer(share_parts=False, transform=None)
    raw = pod("a", 1, spec={"containers": [{"name": "main"}]})
    assert informer._cacheable(raw) is raw
