"""JSON for the API client: orjson for the common case, the standard library for the rest."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import orjson

_DEEPEST = 20_000
"""Nesting the decoder follows (the API server stores up to 10,000 levels)."""


def loads(data: bytes | str) -> Any:
    """JSON, however deeply nested: one deep object must not make a whole list unreadable.

    orjson decodes at a fraction of the standard library's cost (watch events are most of a
    controller's CPU), but it stops at 1,024 levels; the standard library takes the rest.
    orjson reads an integer beyond 64 bits as a float: the API server holds numbers as int64
    or float64, so such a number was a float there too.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(data)
    except RecursionError:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, _DEEPEST))
        try:
            return json.loads(data)
        finally:
            sys.setrecursionlimit(limit)


def dumps(body: Any) -> bytes:
    """A request body; the standard library takes what orjson refuses (integers beyond 64
    bits, nesting beyond 254 levels, keys that are not strings)."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        return json.dumps(body, separators=(",", ":")).encode()


def decode_error(data: bytes) -> Any:
    """A failure's body: the Status object, or the text a proxy or a 404 page sent instead."""
    try:
        return loads(data) if data else None
    except ValueError:
        return data.decode(errors="replace")


_OBJECT = b'"object":{'
_METADATA = b'"metadata":{'
_MANAGED_FIELDS = b',"managedFields":['
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[][{}]')


def loads_without_managed_fields(data: bytes) -> Any:
    """A watch event's JSON, its object's `metadata.managedFields` cut from the text unread.

    managedFields, which no controller reads, can be most of an object's bytes (a Pod lists
    every env entry there), and decoding it was most of a watch's cost. The API server writes
    it as the last field of a built-in object's `metadata`, and its entries hold no arrays, so
    it spans from its key to the first `]}`. The cut is made only when the key is a field of
    the event object's own `metadata` (checked by scanning the text before it) and no `],`
    comes before that `]}` (the field was last); when the cut text does not decode (a `]}`
    inside a string), or in any other case (custom resources, whose keys the server sorts),
    the whole text is decoded, as `loads` does.
    """
    body = data.find(_OBJECT)
    start = data.find(_METADATA, body)
    key = data.find(_MANAGED_FIELDS, start)
    end = data.find(b"]}", key)
    if (
        min(body, start, key, end) < 0
        or data.find(b"],", key, end) >= 0
        or not _directly_inside(data, body + len(_OBJECT), start)
        or not _directly_inside(data, start + len(_METADATA), key)
    ):
        return loads(data)
    try:
        return orjson.loads(data[:key] + data[end + 1 :])
    except orjson.JSONDecodeError:
        return loads(data)


def _directly_inside(data: bytes, start: int, end: int) -> bool:
    """Whether `data[start:end]` stays inside the object opened just before `start` and ends
    at its own level: `end` is then where one of that object's keys may follow."""
    depth = 0
    for token in _TOKENS.finditer(data, start, end):
        bracket = token[0]
        if bracket in (b"{", b"["):
            depth += 1
        elif bracket in (b"}", b"]"):
            depth -= 1
            if depth < 0:
                return False
    return depth == 0
