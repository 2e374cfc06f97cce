"""CRD generation: a job kind's CustomResourceDefinition, with structural schemas from its models.

`structural_schema` turns a pydantic model's JSON schema into the structural OpenAPI v3 subset
the API server accepts: `$ref`s inlined, `Optional` unwrapped (the server prunes nulls of
non-nullable fields, the model reads a missing field as None), titles and defaults dropped
(the models apply defaults), and `x-kubernetes-preserve-unknown-fields` wherever a model keeps
unknown fields (`OpenModel`, `dict[str, Any]`, `Any`).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from jobcore._jobs.hooks import hooks_of
from jobcore._jobs.kind import JobKind

CATEGORIES = ("jobcore",)
"""`kubectl get jobcore` lists the jobs of every kind."""

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_COPIED = (
    "description",
    "minimum",
    "maximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
)
_FORMATS = frozenset(
    {"int32", "int64", "float", "double", "byte", "date", "date-time", "duration", "uri", "email"}
    | {"hostname", "ipv4", "ipv6", "uuid", "password"}
)
"""Formats both pydantic emits and the API server knows; others are dropped, not guessed."""
_UNSUPPORTED = ("oneOf", "not", "prefixItems", "if", "patternProperties")


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of `model` as it appears on the wire (camelCase).

    Raises ValueError for what a structural schema cannot say: recursive models, unions of
    different types (other than int | str), tuples.
    """
    raw = model.model_json_schema(by_alias=True, mode="validation")
    return _convert(raw, defs=raw.get("$defs", {}), path=model.__name__, seen=())


def _convert(
    node: Mapping[str, Any], *, defs: Mapping[str, Any], path: str, seen: tuple[str, ...]
) -> dict[str, Any]:
    """One JSON schema node, converted; `seen` holds the `$defs` being inlined above it."""
    if "$ref" in node:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        if name in seen:
            raise ValueError(f"{path}: {name} contains itself; a CRD schema cannot recurse")
        siblings = {k: v for k, v in node.items() if k != "$ref"}  # field description wins
        return _convert({**defs[name], **siblings}, defs=defs, path=path, seen=(*seen, name))
    if "allOf" in node and len(node["allOf"]) == 1:
        rest = {k: v for k, v in node.items() if k != "allOf"}
        return _convert({**node["allOf"][0], **rest}, defs=defs, path=path, seen=seen)
    if "anyOf" in node:
        return _convert_union(node, defs=defs, path=path, seen=seen)
    unsupported = [key for key in (*_UNSUPPORTED, "allOf") if key in node]
    if unsupported:
        raise ValueError(f"{path}: {unsupported[0]} has no structural equivalent")

    out: dict[str, Any] = {}
    kind = node.get("type")
    if kind is None:  # Any: every JSON value is allowed and kept
        out.update(_copied(node))
        out[_PRESERVE] = True
        return out
    if not isinstance(kind, str):
        raise ValueError(f"{path}: a field must have one type, not {kind}")
    out["type"] = kind
    out.update(_copied(node))
    if "exclusiveMinimum" in node:  # JSON Schema 2020-12 number -> OpenAPI 3.0 boolean
        out["minimum"], out["exclusiveMinimum"] = node["exclusiveMinimum"], True
    if "exclusiveMaximum" in node:
        out["maximum"], out["exclusiveMaximum"] = node["exclusiveMaximum"], True
    if node.get("format") in _FORMATS:
        out["format"] = node["format"]
    if "const" in node:
        out["enum"] = [node["const"]]
    elif "enum" in node:
        out["enum"] = list(node["enum"])
    if kind == "object":
        out.update(_convert_object(node, defs=defs, path=path, seen=seen))
    elif kind == "array":
        items = node.get("items", {})
        out["items"] = _convert(items, defs=defs, path=f"{path}[]", seen=seen)
    return out


def _convert_union(
    node: Mapping[str, Any], *, defs: Mapping[str, Any], path: str, seen: tuple[str, ...]
) -> dict[str, Any]:
    """`X | None` becomes X; `int | str` becomes int-or-string; other unions are refused."""
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    variants = [v for v in node["anyOf"] if v.get("type") != "null"]
    if len(variants) == 1:
        return _convert({**variants[0], **rest}, defs=defs, path=path, seen=seen)
    if sorted(str(v.get("type")) for v in variants) == ["integer", "string"]:
        return {**_copied(rest), _INT_OR_STRING: True}
    raise ValueError(f"{path}: a union of several types has no structural equivalent")


def _convert_object(
    node: Mapping[str, Any], *, defs: Mapping[str, Any], path: str, seen: tuple[str, ...]
) -> dict[str, Any]:
    """Properties, required, and typed (`dict[str, X]`) or unknown (`extra="allow"`) extras."""
    out: dict[str, Any] = {}
    properties: Mapping[str, Any] = node.get("properties") or {}
    extra = node.get("additionalProperties")
    if properties:
        out["properties"] = {
            name: _convert(sub, defs=defs, path=f"{path}.{name}", seen=seen)
            for name, sub in properties.items()
        }
        if node.get("required"):
            out["required"] = list(node["required"])
    if extra is True or extra == {}:
        out[_PRESERVE] = True
    elif isinstance(extra, Mapping):
        if properties:
            raise ValueError(f"{path}: typed extra fields next to properties are not structural")
        out["additionalProperties"] = _convert(extra, defs=defs, path=f"{path}.*", seen=seen)
    return out


def _copied(node: Mapping[str, Any]) -> dict[str, Any]:
    return {key: node[key] for key in _COPIED if key in node}


def crd_for(kind: JobKind[Any]) -> dict[str, Any]:
    """The `apiextensions.k8s.io/v1` CustomResourceDefinition of a job kind, one version."""
    resource = kind.resource
    if not resource.namespaced:
        raise ValueError(f"{resource.kind}: job kinds are namespaced")
    status = hooks_of(kind).status_part
    columns: list[dict[str, Any]] = [
        *({**column} for column in status.columns),
        *({**column} for column in kind.printer_columns),
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": structural_schema(kind.spec_model),
            "status": structural_schema(status.model),
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{resource.plural}.{resource.group}"},
        "spec": {
            "group": resource.group,
            "names": {
                "kind": resource.kind,
                "listKind": f"{resource.kind}List",
                "plural": resource.plural,
                "singular": resource.kind.lower(),
                "shortNames": list(kind.short_names),
                "categories": list(CATEGORIES),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": resource.version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def write_crds(kinds: Iterable[JobKind[Any]], directory: str | Path) -> list[Path]:
    """Write each kind's CRD to `<directory>/<group>_<plural>.yaml`; return the paths in order."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for kind in kinds:
        path = directory / f"{kind.resource.group}_{kind.resource.plural}.yaml"
        if path in paths:
            raise ValueError(f"two kinds define {kind.resource.plural}.{kind.resource.group}")
        text = yaml.safe_dump(crd_for(kind), sort_keys=False, width=100)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
