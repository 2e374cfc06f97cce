"""JSON for the API client: orjson for the common case, the standard library for the rest."""

from __future__ import annotations

import json
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
