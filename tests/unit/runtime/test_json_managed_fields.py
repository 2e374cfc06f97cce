"""jsoncodec.loads_without_managed_fields: a watch event decoded without its object's
metadata.managedFields, or whole as `loads` reads it when in doubt, never anything else,
whatever the strings hold."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobcore._runtime.jsoncodec import loads
from jobcore._runtime.jsoncodec import loads_without_managed_fields

MANAGED = [
    {
        "manager": "jobcore",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-26T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:env": {}}}}},
    },
    {"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {'v:"a]},"': {}}}},
]


def event(metadata: dict[str, Any], **rest: Any) -> bytes:
    """A watch event as the API server writes it: managedFields the last field of metadata."""
    obj = {"kind": "Pod", "apiVersion": "v1", "metadata": metadata, **rest}
    return json.dumps({"type": "MODIFIED", "object": obj}, separators=(",", ":")).encode()


def without_managed_fields(data: bytes) -> Any:
    expected = loads(data)
    expected["object"]["metadata"].pop("managedFields", None)
    return expected


def read(data: bytes) -> tuple[Any, bool]:
    """What the function read, less the object's managedFields; and whether it cut them."""
    event = loads_without_managed_fields(data)
    cut = "managedFields" not in event["object"]["metadata"]
    event["object"]["metadata"].pop("managedFields", None)
    return event, cut


PLAIN = {"name": "p", "namespace": "ns", "resourceVersion": "7", "uid": "u"}
TRICKY = {
    **PLAIN,
    "labels": {"a": "b"},
    "annotations": {
        "note": 'text with "metadata":{ and ,"managedFields":[ and ]} and ], inside',
        "managedFields": "an annotation of that name",
    },
    "ownerReferences": [{"apiVersion": "v1", "kind": "Job", "name": "j", "uid": "o"}],
    "finalizers": ["x]}"],
}


@pytest.mark.parametrize("metadata", [PLAIN, TRICKY], ids=["plain", "tricky-strings"])
@pytest.mark.parametrize(
    "rest",
    [
        {},
        {"spec": {"containers": [{"name": "main", "args": ["]}", "],"]}]}},
        {"spec": {"template": {"metadata": {"managedFields": [{"manager": "user"}]}}}},
        {"data": {"k": "v"}},
    ],
    ids=["no-spec", "brackets-in-spec", "a-template-with-managed-fields", "configmap"],
)
def test_the_event_reads_as_loads_reads_it_less_the_objects_managed_fields(
    metadata: dict[str, Any], rest: dict[str, Any]
) -> None:
    with_fields = event({**metadata, "managedFields": MANAGED[:1]}, **rest)
    assert read(with_fields) == (without_managed_fields(with_fields), True)
    tricky = event({**metadata, "managedFields": MANAGED}, **rest)  # `]},` in a string
    assert read(tricky)[0] == without_managed_fields(tricky)
    without = event(metadata, **rest)
    assert loads_without_managed_fields(without) == loads(without)


def test_a_metadata_that_is_not_the_objects_own_is_never_cut() -> None:
    """A custom resource's keys come sorted: a field before `metadata` may hold one."""
    data = json.dumps(
        {
            "type": "ADDED",
            "object": {
                "apiVersion": "example.com/v1",
                "data": {"metadata": {"labels": {}, "managedFields": MANAGED[:1]}},
                "kind": "Thing",
                "metadata": {"managedFields": MANAGED[:1], "name": "t"},
            },
        },
        separators=(",", ":"),
    ).encode()
    assert loads_without_managed_fields(data) == loads(data)


def test_managed_fields_that_are_not_metadatas_last_field_are_left_to_loads() -> None:
    data = (
        json.dumps(
            {
                "type": "ADDED",
                "object": {"metadata": {"managedFields": MANAGED, "name": "p", "x": ["y"]}},
            },
            separators=(",", ":"),
        )
        .replace('{"managedFields"', '{"name0":"a","managedFields"')
        .encode()
    )
    assert loads_without_managed_fields(data) == loads(data)


def test_a_list_of_objects_and_text_that_is_no_json_behave_as_loads() -> None:
    listed = json.dumps(
        {
            "metadata": {"resourceVersion": "1"},
            "items": [{"metadata": {"name": "a", "managedFields": MANAGED}}],
        }
    ).encode()
    listed = listed.replace(b" ", b"")
    assert loads_without_managed_fields(listed) == loads(listed)
    with pytest.raises(ValueError):
        loads_without_managed_fields(b'{"metadata":{"name":"a","managedFields":[]}')
