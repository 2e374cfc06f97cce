"""Server-sent events: the one-way stream a live page reads its updates from.

An event is a name and an HTML fragment, one `data:` line per line of it; a comment every
`KEEPALIVE` seconds lets a closed page be noticed (its write fails) even when nothing changes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiohttp import web

KEEPALIVE = 15.0


class EventStream:
    """An open `text/event-stream` answer."""

    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response
        """The answer, for the handler to return once the stream has ended."""
        self._lock = asyncio.Lock()

    async def send(self, event: str, html: str) -> None:
        data = "".join(f"data: {line}\n" for line in html.splitlines() or [""])
        async with self._lock:
            await self.response.write(f"event: {event}\n{data}\n".encode())

    async def _keep_alive(self, owner: asyncio.Task[object]) -> None:
        """Write a comment now and then; once the page is gone, cancel the stream's `owner`,
        which may be waiting for a change that never comes."""
        try:
            while True:
                await asyncio.sleep(KEEPALIVE)
                async with self._lock:
                    await self.response.write(b": keep-alive\n\n")
        except ConnectionError:
            owner.cancel()


@contextlib.asynccontextmanager
async def event_stream(request: web.Request) -> AsyncIterator[EventStream]:
    """Open the stream; it ends when the block does (the handler then returns
    `stream.response`) or when the page goes away (the block's next write fails, or the
    keep-alive's, which cancels the block)."""
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        }
    )
    await response.prepare(request)
    stream = EventStream(response)
    owner = asyncio.current_task()
    assert owner is not None  # a request handler always runs in a task
    keep_alive = asyncio.create_task(stream._keep_alive(owner))
    try:
        yield stream
        await response.write_eof()
    except ConnectionError:
        pass  # the page went away while a write was under way
    finally:
        keep_alive.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await keep_alive
