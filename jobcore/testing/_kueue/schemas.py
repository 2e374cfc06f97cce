"""Structural schemas of the Kubernetes types that Kueue's API embeds, for its CRDs.

Conditions, quantities, tolerations, taints, label selectors and pod templates, as
apiextensions.k8s.io/v1 on Kubernetes 1.20 takes them.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

STRING: Schema = {"type": "string"}
BOOLEAN: Schema = {"type": "boolean"}
INT32: Schema = {"type": "integer", "format": "int32"}
INT64: Schema = {"type": "integer", "format": "int64"}
TIME: Schema = {"type": "string", "format": "date-time"}
STRING_MAP: Schema = {"type": "object", "additionalProperties": STRING}
OPEN: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
"""An object the stand-in never reads, kept as written (Kueue's own CRD types it fully)."""

QUANTITY: Schema = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": (
        r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
        r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
    ),
    "x-kubernetes-int-or-string": True,
}
RESOURCE_LIST: Schema = {"type": "object", "additionalProperties": QUANTITY}
NAME: Schema = {
    "type": "string",
    "maxLength": 63,
    "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
}
"""A PodSetReference: a DNS label."""
SUBDOMAIN: Schema = {
    "type": "string",
    "maxLength": 253,
    "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
}


def obj(
    properties: Schema, *, required: tuple[str, ...] = (), extra: Schema | None = None
) -> Schema:
    """An object with these properties; `extra` adds keywords (a default, an extension)."""
    schema: Schema = {"type": "object", "properties": properties, **(extra or {})}
    if required:
        schema["required"] = list(required)
    return schema


def array(items: Schema, **extra: Any) -> Schema:
    return {"type": "array", "items": items, **extra}


def map_list(items: Schema, *keys: str, max_items: int | None = None) -> Schema:
    """A list merged by `keys` (`+listType=map`)."""
    schema = array(
        items, **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}
    )
    if max_items is not None:
        schema["maxItems"] = max_items
    return schema


def enum(*values: str, default: str | None = None) -> Schema:
    schema: Schema = {"type": "string", "enum": list(values)}
    if default is not None:
        schema["default"] = default
    return schema


CONDITION = obj(
    {
        "type": {"type": "string", "maxLength": 316},
        "status": enum("True", "False", "Unknown"),
        "observedGeneration": {**INT64, "minimum": 0},
        "lastTransitionTime": TIME,
        "reason": {"type": "string", "minLength": 1, "maxLength": 1024},
        "message": {"type": "string", "maxLength": 32768},
    },
    required=("type", "status", "lastTransitionTime", "reason", "message"),
)
CONDITIONS = map_list(CONDITION, "type", max_items=16)

TOLERATION = obj(
    {
        "key": STRING,
        "operator": STRING,
        "value": STRING,
        "effect": STRING,
        "tolerationSeconds": INT64,
    }
)
TAINT = obj(
    {"key": STRING, "value": STRING, "effect": STRING, "timeAdded": TIME},
    required=("key", "effect"),
)
LABEL_SELECTOR = obj(
    {
        "matchLabels": STRING_MAP,
        "matchExpressions": array(
            obj(
                {"key": STRING, "operator": STRING, "values": array(STRING)},
                required=("key", "operator"),
            )
        ),
    },
    extra={"x-kubernetes-map-type": "atomic"},
)

_CONTAINER = obj(
    {
        "name": STRING,
        "resources": obj({"requests": RESOURCE_LIST, "limits": RESOURCE_LIST}),
    },
    required=("name",),
    extra={"x-kubernetes-preserve-unknown-fields": True},
)
POD_TEMPLATE = obj(
    {
        "metadata": obj({"labels": STRING_MAP, "annotations": STRING_MAP}),
        "spec": obj(
            {
                "containers": array(_CONTAINER),
                "initContainers": array(_CONTAINER),
                "nodeSelector": STRING_MAP,
                "tolerations": array(TOLERATION),
                "overhead": RESOURCE_LIST,
                "priorityClassName": STRING,
            },
            required=("containers",),
            extra={"x-kubernetes-preserve-unknown-fields": True},
        ),
    }
)
"""A pod template: what admission reads (requests, node selector, tolerations) is typed;
the rest of the pod spec is kept as written, where Kueue's CRD types all of core/v1's."""
