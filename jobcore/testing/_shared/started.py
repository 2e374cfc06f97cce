"""What the testing kit starts and stops: a control plane, a proxy, `async with` either."""

from __future__ import annotations

from typing import Self


class Started:
    """`start()` and `stop()`, and `async with` to run the two around a block."""

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
