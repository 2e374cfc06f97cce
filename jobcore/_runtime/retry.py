"""When a failed API request is sent again, how long after, and how long the server asked."""

from __future__ import annotations

import math
from collections.abc import Awaitable
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any
from typing import TypeVar

import aiohttp
import structlog
from tenacity import AsyncRetrying
from tenacity import RetryCallState
from tenacity import retry_if_exception
from tenacity import stop_after_attempt
from tenacity import wait_random_exponential

from jobcore._runtime.errors import ApiError

_REPEATABLE_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})
_JSON_PATCH = "application/json-patch+json"
_IDEMPOTENT_JSON_PATCH_OPS = frozenset({"replace", "test"})
# Failures to connect at all: the request never left, so any method may be sent again.
_NOT_SENT = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
_log = structlog.get_logger("jobcore.client")
T = TypeVar("T")

MAX_ASKED_WAIT = 600.0
"""The longest pause a `Retry-After` obtains from a caller that retries on its own (an
informer, the work queue): a server asking more is misconfigured, and a cache or a job must
not stall on it for hours."""


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


def asked_wait(exc: BaseException) -> float:
    """The seconds the server asked to wait before a retry, in the failure or what caused it
    (0 when it did not ask), at most `MAX_ASKED_WAIT`."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ApiError) and cause.retry_after is not None:
            return min(cause.retry_after, MAX_ASKED_WAIT)
        cause = cause.__cause__
    return 0.0


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


class Retries:
    """A client's retries of one request: up to `attempts` sends, with jittered exponential
    backoff of at most `max_wait` seconds, and at least what `Retry-After` asked.

    An answer asking for more than `retry_after_max` seconds is raised at once, with its
    `retry_after`: sending sooner than asked would be impolite, and waiting that long inside
    one request would hold its caller (a reconcile, an informer) that comes back when asked.
    """

    def __init__(self, attempts: int, max_wait: float, retry_after_max: float) -> None:
        self._attempts = attempts
        self._retry_after_max = retry_after_max
        self._backoff = wait_random_exponential(multiplier=0.1, max=max_wait)

    def _retries(self, exc: BaseException, *, repeatable: bool) -> bool:
        if isinstance(exc, ApiError) and (exc.retry_after or 0.0) > self._retry_after_max:
            return False
        return should_retry(exc, repeatable=repeatable)

    def _wait(self, state: RetryCallState) -> float:
        """Backoff before the next send: at least what `Retry-After` asked."""
        backoff: float = self._backoff(state)
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ApiError) and exc.retry_after is not None:
            return max(backoff, exc.retry_after)
        return backoff

    async def send(
        self, send: Callable[[], Awaitable[T]], *, repeatable: bool, method: str, path: str
    ) -> T:
        """`send()`'s answer, sent again after failures that may be retried.

        Most requests succeed at once, so tenacity (whose set-up was a tenth of the
        controller's CPU while it created pods) takes over only after a failure it may retry,
        counting that failure as its first attempt.
        """
        try:
            return await send()
        except Exception as exc:
            if not self._retries(exc, repeatable=repeatable):
                raise
            failures = [exc]

        async def again() -> T:
            if failures:
                raise failures.pop()  # the first send's, as tenacity's first attempt
            return await send()

        retrying = AsyncRetrying(
            retry=retry_if_exception(lambda exc: self._retries(exc, repeatable=repeatable)),
            stop=stop_after_attempt(self._attempts),
            wait=self._wait,
            reraise=True,
            before_sleep=lambda state: _log.debug(
                "retrying request",
                method=method,
                path=path,
                attempt=state.attempt_number,
                wait=round(state.upcoming_sleep, 3),
                error=str(state.outcome.exception()) if state.outcome else None,
            ),
        )
        result: T = await retrying(again)
        return result
