"""Wait in a test until a condition about the cluster or a controller holds."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable


async def eventually(
    check: Callable[[], object], *, timeout: float = 20.0, interval: float = 0.02
) -> None:
    """Poll `check` (plain or async) until it returns something true; TimeoutError after `timeout`.

    Controllers converge asynchronously, so tests assert on the state they reach, not on
    when; polling keeps a test independent of how the controller gets there.
    """
    async with asyncio.timeout(timeout):
        while True:
            result = check()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return
            await asyncio.sleep(interval)
