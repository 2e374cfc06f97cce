"""Bound what the clients of the probe and metrics servers can hold: connections, heads, time.

aiohttp bounds a header line and the number of headers, not a request head's size, and keeps
an unfinished head for its keep-alive timeout: 126 headers of 8,000 bytes held 2 MB per
connection, for an hour by default. Each connection's protocol is wrapped here instead: the
bytes a client sends before its request starts are counted and timed, and the connections that
have waited longest for a request make room for new ones, so the kubelet's probe, which sends
its head at once, gets through a server full of slow clients.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from aiohttp import web

__all__ = ["ConnectionGuard", "ServerLimits", "request_started"]

_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"Connection: close\r\nContent-Length: 0\r\n\r\n"
)


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """What the clients of a probe or metrics server may hold of it (controller-runtime's
    servers: 32 s to read a head, 90 s idle, heads of 1 MiB, connections unbounded)."""

    header_timeout: float = 32.0
    """Seconds for a request's head to arrive, from the connection's opening or from the
    first byte after the previous request started."""
    idle_timeout: float = 90.0
    """Seconds a kept-alive connection may wait for its next request."""
    max_header_bytes: int = 16384
    """Bytes a client may send before its request starts, request line included; one more
    and the server answers 431 and closes the connection. aiohttp also bounds each line at
    8,190 bytes."""
    max_connections: int = 128
    """Open connections; the next one closes the connection that has waited longest since it
    opened or started its last request."""

    def __post_init__(self) -> None:
        if min(self.header_timeout, self.idle_timeout) <= 0:
            raise ValueError("header_timeout and idle_timeout must be positive")
        if min(self.max_header_bytes, self.max_connections) < 1:
            raise ValueError("max_header_bytes and max_connections must be at least 1")


class ConnectionGuard:
    """A protocol factory for `loop.create_server`: wraps each protocol `factory` makes (an
    aiohttp `web.Server`) to enforce `limits`. Its application needs the `request_started`
    middleware, which tells a connection that its request head has arrived."""

    def __init__(self, factory: Callable[[], asyncio.Protocol], limits: ServerLimits) -> None:
        self.limits = limits
        self._factory = factory
        self._open: dict[_Connection, None] = {}
        """Open connections, the one that has waited longest first."""

    def __call__(self) -> asyncio.Protocol:
        return _Connection(self._factory(), self)

    def admit(self, connection: _Connection) -> None:
        """Count `connection` in, closing the one that has waited longest if it is one too many."""
        if len(self._open) >= self.limits.max_connections:
            next(iter(self._open)).drop()
        self._open[connection] = None

    def touch(self, connection: _Connection) -> None:
        """`connection` started a request: it goes to the back of the line."""
        if connection in self._open:
            del self._open[connection]
            self._open[connection] = None

    def forget(self, connection: _Connection) -> None:
        self._open.pop(connection, None)


class _Connection(asyncio.Protocol):
    """One client's connection: passes everything on to aiohttp's protocol, counting and
    timing the bytes that come before a request starts."""

    def __init__(self, inner: asyncio.Protocol, guard: ConnectionGuard) -> None:
        self._inner = inner
        self._guard = guard
        self._transport: asyncio.Transport | None = None
        self._unstarted = 0
        """Bytes received since the connection opened or its last request started."""
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass
        self._guard.admit(self)
        self._start_clock()
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._unstarted += len(data)
        if self._unstarted > self._guard.limits.max_header_bytes:
            self._end(answer=_TOO_LARGE)
            return
        if self._deadline is None:
            self._start_clock()
        self._inner.data_received(data)

    def request_started(self) -> None:
        """The request's head has arrived: what comes next counts toward the next head."""
        self._unstarted = 0
        self._stop_clock()
        self._guard.touch(self)

    def drop(self) -> None:
        """Close the connection at once, discarding what it has left to send (a response its
        client does not read would keep it open)."""
        self._end()

    def _end(self, answer: bytes = b"") -> None:
        self._guard.forget(self)
        self._stop_clock()
        if self._transport is None:
            return
        if answer:  # closed once sent: a reset could discard it before the client reads it
            self._transport.write(answer)
            self._transport.close()
        else:
            self._transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._guard.forget(self)
        self._stop_clock()
        self._inner.connection_lost(exc)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def _start_clock(self) -> None:
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(self._guard.limits.header_timeout, self.drop)

    def _stop_clock(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def request_started(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Tell the request's connection, if a `ConnectionGuard` made it, that its head arrived."""
    connection = request.transport.get_protocol() if request.transport else None
    if isinstance(connection, _Connection):
        connection.request_started()
    return await handler(request)
