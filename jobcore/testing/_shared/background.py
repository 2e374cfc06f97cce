"""Run a coroutine in the background for the length of a `with` block, then cancel it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from collections.abc import Coroutine
from typing import Any
from typing import TypeVar

T = TypeVar("T")


@contextlib.asynccontextmanager
async def background(work: Coroutine[Any, Any, T]) -> AsyncIterator[asyncio.Task[T]]:
    """Start `work` as a task; on exit cancel it and wait, re-raising any error it hit first.

    `async with background(manager.run()) as task:` keeps a runnable going while a test acts
    on the cluster, and never leaves it running after the test.
    """
    task = asyncio.create_task(work)
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
