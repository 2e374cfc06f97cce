"""A fence on a client's writes, checked again once a write has its connection.

`Client.fenced` checks its fence before a write waits for its connection; a process frozen
(SIGSTOP, a stalled VM) between that check and the write would send it on resuming, after it
lost its lease. This trace checks the fence again when aiohttp hands the request its
connection, right before the request is written, so that only a process frozen inside that
last step can still send one: the writes that can carry a precondition do.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import aiohttp

Fence = Callable[[], None]
"""Raises to refuse a write."""


async def _check(
    _session: aiohttp.ClientSession, context: SimpleNamespace, _params: object
) -> None:
    fence: Fence | None = context.trace_request_ctx
    if fence is not None:
        fence()


def fence_trace() -> aiohttp.TraceConfig:
    """A trace that calls the request's fence (its `trace_request_ctx`) once the request has
    a connection, new or reused; aiohttp releases the connection when the fence raises."""
    trace = aiohttp.TraceConfig()
    trace.on_connection_reuseconn.append(_check)
    trace.on_connection_create_end.append(_check)
    return trace
