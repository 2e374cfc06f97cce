"""One copy of what cached objects have in common: equal strings and equal subtrees.

Most of a Pod repeats its siblings' (containers, volumes, tolerations, owner references) and
its own previous version. `compact` rebuilds an object decoded from JSON with short strings
interned and each dict or list replaced by an equal one compacted before, when there is one.
Given the object's previous version, it first takes that version's parts wherever they are
equal. Cached objects are read-only, so sharing their parts is safe.

A subtree's key is its type and its children's parts: a string is its own part; a number, a
bool or None is (type, value), so that 1, 1.0, True, 0.0 and -0.0 differ; a dict or list is
named by identity, which is sound because a table entry keeps its children alive. The table
is emptied when full, which forgets sharing and nothing else. It never holds whole objects
(they differ by resourceVersion anyway) nor anything above a string longer than
`_SHARE_MAX_LEN` (a key, a certificate, a script), so it keeps no blobs alive.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson

from jobcore._runtime.resources import Object

_INTERN_MAX_LEN = 64
_SHARE_MAX_LEN = 256
_CAPACITY = 4096
_table: dict[tuple[Any, ...], tuple[Any, tuple[Any, ...]]] = {}
"""key -> (the canonical subtree, its children as compacted)."""
_intern = sys.intern


def compact(obj: Object, previous: Object | None = None) -> Object:
    """`obj` rebuilt from parts shared with the objects compacted before it.

    `previous` is a compacted object `obj` resembles: the version it replaces, or a sibling
    (a Pod of the same job). Its parts two levels down (a Pod's `spec.containers`,
    `status.conditions`, `metadata.labels`) are taken wherever they are equal, compared as
    JSON text, which costs a fraction of compacting them again.
    Raises RecursionError for an object nested deeper than Python recurses.
    """
    if previous is None:
        return {_intern(name): _compact(item)[0] for name, item in obj.items()}
    return {_intern(name): _update(item, previous.get(name), 1) for name, item in obj.items()}


def _update(value: Any, old: Any, levels: int) -> Any:
    """`value` compacted, reusing `old` (its previous version) if equal; else, `levels` deep,
    rebuilt from old's equal children and compacted new ones. Rebuilt containers are not
    shared: they are where an object changes, so they seldom equal another's."""
    kind = type(value)
    if not (kind is dict or kind is list) or type(old) is not kind:
        return _compact(value)[0]
    if _same(value, old):
        return old
    if not levels:
        return _compact(value)[0]
    if type(old) is dict:
        return {
            _intern(name): _update(item, old.get(name), levels - 1) for name, item in value.items()
        }
    return [
        _update(item, old[i] if i < len(old) else None, levels - 1) for i, item in enumerate(value)
    ]


_NOT_JSON = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
"""Types a transform might return that orjson would otherwise write as JSON: refused."""


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: unlike ==, True differs from 1 and 1 from 1.0."""
    try:
        return orjson.dumps(a, option=_NOT_JSON) == orjson.dumps(b, option=_NOT_JSON)
    except orjson.JSONEncodeError:  # nested too deep for orjson, or not JSON: assume not
        return False


def _compact(value: Any) -> tuple[Any, Any]:
    """`value` compacted, and its part in its parent's key (None: not to be shared).

    Runs for every watch event, so it dispatches on exact types: JSON gives no subclasses.
    """
    kind = type(value)
    if kind is str:
        if len(value) <= _INTERN_MAX_LEN:
            value = _intern(value)
            return value, value
        return value, value if len(value) <= _SHARE_MAX_LEN else None
    if kind is dict:
        compacted: Any = {}
        parts: list[Any] = [dict]
        for name, item in value.items():
            interned = _intern(name)
            compacted[interned], part = _compact(item)
            parts += (interned, part)
    elif kind is list:
        compacted = []
        parts = [list]
        for item in value:
            shared_item, part = _compact(item)
            compacted.append(shared_item)
            parts.append(part)
    elif kind is float:
        return value, (kind, value.hex())
    elif kind is int or kind is bool or value is None:
        return value, (kind, value)
    else:  # not from JSON: kept as it is, and what holds it is not shared
        return value, None
    if None in parts:
        return compacted, None
    key = tuple(parts)
    entry = _table.get(key)
    if entry is None:
        if len(_table) >= _CAPACITY:
            _table.clear()
        children = tuple(compacted.values() if kind is dict else compacted)
        entry = _table[key] = (compacted, children)
    return entry[0], id(entry[0])


def _part(value: Any) -> Any:
    """A child's part in its parent's key, as `_compact` gives it."""
    kind = type(value)
    if kind is str:
        return value if len(value) <= _SHARE_MAX_LEN else None
    if kind is dict or kind is list:
        return id(value)
    return (kind, value.hex()) if kind is float else (kind, value)


def modified_subtrees() -> list[Any]:
    """Shared subtrees changed in place since they were compacted: cached objects someone
    modified. They are forgotten, so each is reported once; the testing kit's pytest plugin
    fails a test that leaves any.
    """
    modified = []
    for key, (subtree, _) in list(_table.items()):
        if type(subtree) is dict:
            parts: list[Any] = [dict]
            for name, item in subtree.items():
                parts += (name, _part(item))
        else:
            parts = [list, *map(_part, subtree)]
        if tuple(parts) != key:
            modified.append(subtree)
            del _table[key]
    return modified
