"""Unit tests for jobcore._runtime.compact: cached objects share equal parts, and stay exact."""

from __future__ import annotations

import collections
import copy
import datetime
import json
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

import pytest

from jobcore._runtime import compact as compact_module
from jobcore._runtime.compact import compact
from jobcore._runtime.compact import modified_subtrees


@pytest.fixture(autouse=True)
def empty_table() -> Iterator[None]:
    compact_module._table.clear()
    yield
    compact_module._table.clear()


def pod(name: str, version: int, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(version)}, **fields}


def shared(*objects: Any) -> bool:
    return all(o is objects[0] for o in objects)


def test_equal_subtrees_are_one_object() -> None:
    spec = {"containers": [{"name": "main", "image": "img", "ports": [{"containerPort": 22}]}]}
    first = compact(pod("a", 1, spec=copy.deepcopy(spec), status={"phase": "Running"}))
    second = compact(pod("b", 1, spec=copy.deepcopy(spec), status={"phase": "Pending"}))
    newer = compact(pod("a", 2, spec=copy.deepcopy(spec), status={"phase": "Running"}))

    assert first["spec"] == second["spec"] == spec
    assert shared(first["spec"], second["spec"], newer["spec"])
    assert shared(first["status"], newer["status"]) and first["status"] is not second["status"]
    assert first["metadata"] is not newer["metadata"]  # the resourceVersion differs


def test_values_that_only_compare_equal_stay_apart() -> None:
    values = [1, 1.0, True, "1", None, 0, False, 0.0, -0.0, [], {}, ["x", "y"], {"x": "y"}]
    for value in values:
        original = {"spec": {"value": value}}
        assert json.dumps(compact(copy.deepcopy(original))) == json.dumps(original)


def test_exact_when_the_table_fills(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compact_module, "_CAPACITY", 3)
    originals = [
        pod(f"p{i}", i, spec={"containers": [{"name": "main", "args": [str(i % 3)] * (i % 4)}]})
        for i in range(40)
    ]
    assert [compact(copy.deepcopy(p)) for p in originals] == originals


def test_neither_whole_objects_nor_blobs_are_kept() -> None:
    key = "k" * (compact_module._SHARE_MAX_LEN + 1)
    command = "c" * (compact_module._INTERN_MAX_LEN + 1)  # long, but shared
    secret = compact({"kind": "Secret", "data": {"id_rsa": key}, "type": "Opaque"})
    first = compact(pod("a", 1, spec={"command": [command]}))
    second = compact(pod("b", 1, spec={"command": [command]}))

    kept = [subtree for subtree, _ in compact_module._table.values()]
    assert all(subtree is not obj for subtree in kept for obj in (secret, first, second))
    assert all(subtree is not secret["data"] for subtree in kept)
    assert secret["data"] == {"id_rsa": key}
    assert shared(first["spec"], second["spec"])


def test_types_json_never_gives_are_kept_as_they_are() -> None:
    ordered = collections.OrderedDict(a=1)
    obj = compact({"spec": {"ordered": ordered, "pair": (1, 2)}})
    assert obj["spec"]["ordered"] is ordered and obj["spec"]["pair"] == (1, 2)


def test_a_change_in_place_is_found_once() -> None:
    containers = [{"name": "main", "args": ["train"]}]
    cached = compact(pod("a", 1, spec={"containers": copy.deepcopy(containers)}))
    assert modified_subtrees() == []

    cached["spec"]["containers"][0]["args"].append("--resume")
    assert modified_subtrees() == [["train", "--resume"]]
    assert modified_subtrees() == []
    again = compact(pod("b", 1, spec={"containers": copy.deepcopy(containers)}))
    assert again["spec"]["containers"] == containers


def test_a_change_in_place_never_reaches_unequal_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """A list entry stored just after the table emptied names its child by identity; the entry
    keeps that child alive, so a new, different child can never take over its identity."""
    monkeypatch.setattr(compact_module, "_CAPACITY", 3)
    compact_module._table.update({("filler", n): ({}, ()) for n in range(2)})
    cached = compact({"items": [{"name": "a"}]})  # the list is stored after a clear
    other = {"items": [{"name": "b"}]}
    arg = copy.deepcopy(other)
    spare: dict[str, Any] = {}

    cached["items"][0] = {"name": "zzz"}  # a bug elsewhere: the old child is dropped
    del spare  # freed after it: in CPython the next two dicts made reuse their memory
    assert compact(arg) == other
    assert modified_subtrees() == [[{"name": "zzz"}]]


def test_an_update_takes_the_equal_parts_of_its_previous_version() -> None:
    containers = [{"name": "main", "image": "img", "args": ["train"]}]
    scheduled = [{"type": "PodScheduled", "status": "True"}]
    before = compact(
        pod("a", 1, spec={"containers": copy.deepcopy(containers)}, status={"phase": "Pending"})
    )
    compact_module._table.clear()  # nothing left to share with but the previous version
    update = pod(
        "a",
        2,
        spec={"containers": copy.deepcopy(containers), "nodeName": "n1"},
        status={"phase": "Pending", "conditions": scheduled},
    )
    after = compact(copy.deepcopy(update), previous=before)

    assert after == update
    assert after["spec"] is not before["spec"]  # it changed: nodeName
    assert shared(after["spec"]["containers"], before["spec"]["containers"])
    again = compact(copy.deepcopy(update), previous=after)
    assert all(again[name] is after[name] for name in ("metadata", "spec", "status"))


def test_an_update_keeps_changes_that_only_compare_equal() -> None:
    pairs = [(True, 1), (1, 1.0), (0.0, -0.0), (False, 0), ({"a": 1, "b": 2}, {"b": 2, "a": 1})]
    shapes: list[Callable[[Any], dict[str, Any]]] = [
        lambda v: {"spec": {"x": {"v": v}}},
        lambda v: {"spec": {"v": v}},
        lambda v: {"spec": v},
    ]
    for old, new in pairs:
        for shape in shapes:
            after = compact(shape(new), previous=compact(shape(old)))
            assert json.dumps(after) == json.dumps(shape(new))


def test_an_update_never_takes_an_equal_looking_value_of_another_type() -> None:
    when = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)
    before = compact({"spec": {"x": {"at": when.isoformat()}}})
    after = compact({"spec": {"x": {"at": when}}}, previous=before)
    assert after["spec"]["x"]["at"] is when
