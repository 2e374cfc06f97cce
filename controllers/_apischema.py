"""JSON schema in words, for the API reference: a field's type, bounds and default, and the
models a schema refers to (`controllers.apidocs` builds the pages from these)."""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

NONE = "—"
"""A cell with nothing to say: no default, no bound."""


def model_classes(*roots: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every model reachable from `roots` through field annotations, by class name.

    A name two different models share maps to neither: the schema's own `required` is used.
    """
    found: dict[str, type[BaseModel]] = {}
    clashes: set[str] = set()

    def visit(annotation: Any) -> None:
        for argument in typing.get_args(annotation):
            visit(argument)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return
        known = found.get(annotation.__name__)
        if known is annotation:
            return
        if known is not None:
            clashes.add(annotation.__name__)
            return
        found[annotation.__name__] = annotation
        for info in annotation.model_fields.values():
            visit(info.annotation)

    for root in roots:
        visit(root)
    return {name: model for name, model in found.items() if name not in clashes}


def required_fields(model: type[BaseModel]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items() if info.is_required()}


def refs(node: Mapping[str, Any], path: str) -> Iterator[tuple[str, str]]:
    """The models a field's schema refers to, each with the path it appears at."""
    if "$ref" in node:
        yield ref_name(node["$ref"]), path
        return
    for key in ("anyOf", "allOf", "oneOf"):
        for variant in node.get(key) or ():
            yield from refs(variant, path)
    if isinstance(node.get("items"), Mapping):
        yield from refs(node["items"], f"{path}[]")
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield from refs(extra, f"{path}.<key>")


def object_ref(node: Mapping[str, Any]) -> tuple[str, str] | None:
    """The model a field holds, as itself or as a list of it, and the path suffix ("" or [])."""
    node = _unwrap(node)
    if "$ref" in node:
        return ref_name(node["$ref"]), ""
    items = node.get("items")
    if node.get("type") == "array" and isinstance(items, Mapping):
        items = _unwrap(items)
        if "$ref" in items:
            return ref_name(items["$ref"]), "[]"
    return None


def _unwrap(node: Mapping[str, Any]) -> Mapping[str, Any]:
    """`X | None` as X, and a single `allOf` as its one member."""
    variants = [v for v in node.get("anyOf") or () if v.get("type") != "null"]
    if "anyOf" in node and len(variants) == 1:
        return _unwrap(variants[0])
    if len(node.get("allOf") or ()) == 1:
        return _unwrap(node["allOf"][0])
    return node


# A field's cells -------------------------------------------------------------------------


def type_text(node: Mapping[str, Any], *, linked: bool) -> str:
    """A field's type in words: string, list of X, map of string to X, a model (a link if
    `linked`)."""
    if "$ref" in node:
        return link(ref_name(node["$ref"])) if linked else "object"
    if len(node.get("allOf") or ()) == 1:
        return type_text(node["allOf"][0], linked=linked)
    variants = node.get("anyOf") or node.get("oneOf")
    if variants is not None:
        kept = [v for v in variants if v.get("type") != "null"]
        if sorted(str(v.get("type")) for v in kept) == ["integer", "string"]:
            return "integer or string"
        return " or ".join(type_text(v, linked=linked) for v in kept) or "null"
    text = _base_type(node, linked=linked)
    bounds = _bounds(node)
    return f"{text} ({bounds})" if bounds else text


def _base_type(node: Mapping[str, Any], *, linked: bool) -> str:
    if "const" in node:
        return f"`{value_text(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{value_text(v)}`" for v in node["enum"])
    kind = node.get("type")
    if kind is None:
        return "any"
    if kind == "array":
        return "list of " + type_text(node.get("items") or {}, linked=linked)
    if kind == "object":
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping) and extra and not node.get("properties"):
            return "map of string to " + type_text(extra, linked=linked)
        return "object"
    if node.get("format"):
        return f"{kind} ({node['format']})"
    return str(kind)


def _bounds(node: Mapping[str, Any]) -> str:
    """Bounds in words: `at least 1`, `0 to 100`, `at least 1 item`."""
    low, high = node.get("minimum"), node.get("maximum")
    parts = []
    if low is not None:
        parts.append(f"{low} to {high}" if high is not None else f"at least {low}")
    elif high is not None:
        parts.append(f"at most {high}")
    parts += [words(node[key]) for key, words in _BOUNDS if node.get(key) is not None]
    return ", ".join(parts)


def _count(number: int, unit: str) -> str:
    return f"{number} {unit}{'' if number == 1 else 's'}"


_BOUNDS: tuple[tuple[str, Callable[[Any], str]], ...] = (
    ("exclusiveMinimum", lambda n: f"more than {n}"),
    ("exclusiveMaximum", lambda n: f"less than {n}"),
    ("minItems", lambda n: f"at least {_count(n, 'item')}"),
    ("maxItems", lambda n: f"at most {_count(n, 'item')}"),
    ("minProperties", lambda n: f"at least {_count(n, 'entry')}"),
    ("maxProperties", lambda n: f"at most {_count(n, 'entry')}"),
    ("minLength", lambda n: f"at least {_count(n, 'character')}"),
    ("maxLength", lambda n: f"at most {_count(n, 'character')}"),
    ("pattern", lambda p: f"matching `{p}`"),
)
"""The other JSON-schema bounds pydantic emits, each in words."""


def default_text(node: Mapping[str, Any], *, required: bool, by_model: bool) -> str:
    """`required`, `required*` (by the model, not the CRD), the default, or a dash."""
    if required:
        return "required"
    if by_model:
        return "required\\*"
    value = node.get("default")
    if value is None:
        return NONE
    if isinstance(value, dict) and value and object_ref(node) is not None:
        return "its fields' defaults"
    return f"`{value_text(value)}`"


def value_text(value: Any) -> str:
    """A value as YAML would show it: strings bare unless empty, the rest as JSON."""
    if isinstance(value, str) and value and value.strip() == value:
        return value
    return json.dumps(value, separators=(", ", ": "))


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def link(name: str) -> str:
    return f"[{name}](#{anchor(name)})"


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation other than - and _ dropped."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
