"""When a failed API request may be sent again, and how long the server asked to wait."""

from __future__ import annotations

import math
from datetime import UTC
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp

from jobcore._errors import ApiError

_REPEATABLE_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})
_JSON_PATCH = "application/json-patch+json"
_IDEMPOTENT_JSON_PATCH_OPS = frozenset({"replace", "test"})
# Failures to connect at all: the request never left, so any method may be sent again.
_NOT_SENT = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)


def parse_retry_after(value: str | None) -> float | None:
    """The seconds a `Retry-After` header asks for (delta-seconds or an HTTP date), if valid."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def is_repeatable(method: str, body: Any, content_type: str) -> bool:
    """Whether sending the request twice does no more than sending it once.

    Asked when a failure leaves open whether the server acted on the request: a reset, a
    timeout, a 5xx. GET, PUT (a repeat meets a stale resourceVersion: Conflict) and DELETE
    (NotFound) are safe; so are patches that set values (merge, strategic, apply) and JSON
    patches of `replace` and `test` operations only. A create of a named object is too: a
    repeat of one that took effect fails with AlreadyExists, which the caller must take as
    "it exists" (the job reconciler does); one with only `generateName` would make a second
    object, so it is not repeated.
    """
    if method in _REPEATABLE_METHODS:
        return True
    if method == "PATCH":
        if content_type != _JSON_PATCH:
            return True
        return isinstance(body, list) and all(
            isinstance(op, dict) and op.get("op") in _IDEMPOTENT_JSON_PATCH_OPS for op in body
        )
    if method == "POST" and isinstance(body, dict):
        meta = body.get("metadata")
        return isinstance(meta, dict) and bool(meta.get("name"))
    return False


def should_retry(exc: BaseException, *, repeatable: bool) -> bool:
    """Retry transient failures; those of a request that must not repeat only if never acted on.

    A 429 is refused before the server does anything (max-in-flight and priority-and-fairness
    throttling), and a connection that was never made carried nothing.
    """
    if not isinstance(exc, ApiError) or not exc.retryable:
        return False
    return repeatable or exc.status == 429 or isinstance(exc.__cause__, _NOT_SENT)
