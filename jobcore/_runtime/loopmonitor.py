"""How long the event loop was held: a timer's lateness measures whatever blocked the loop.

Reconciles, watch events, health probes and lease renewals share one thread; a step that
holds it for long delays all of them (a late lease renewal loses leadership, a late probe
restarts the pod). The monitor sleeps a short interval over and over and records, in
`jobcore_event_loop_lag_seconds`, how late each wake-up came.
"""

from __future__ import annotations

import asyncio

from jobcore._runtime import metrics

DEFAULT_INTERVAL = 0.05
"""Seconds between wake-ups: a lag shorter than this may fall between two of them."""


class LoopMonitor:
    """A runnable that records the event loop's lag until cancelled."""

    def __init__(self, interval: float = DEFAULT_INTERVAL) -> None:
        self.interval = interval

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await asyncio.sleep(self.interval)
            lag = loop.time() - started - self.interval
            metrics.event_loop_lag_seconds.observe(max(lag, 0.0))
