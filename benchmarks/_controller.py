"""The controller as bench_scale runs it: `jobcore run` as its own process, what /proc says
of it, and its /metrics read back."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp

from benchmarks._common import cpu_seconds
from benchmarks._common import status_mb
from jobcore.testing import eventually


@dataclass
class Process:
    """The controller process and what /proc says of it."""

    pid: int
    metrics_port: int
    probe_port: int

    def peak_rss_mb(self) -> float:
        return status_mb(self.pid, "VmHWM:")

    def rss_mb(self) -> float:
        return status_mb(self.pid, "VmRSS:")

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    async def ready(self) -> bool:
        """Whether /readyz answers 200: every informer has loaded its first list."""
        url = f"http://127.0.0.1:{self.probe_port}/readyz"
        with contextlib.suppress(aiohttp.ClientError):
            async with aiohttp.ClientSession() as session, session.get(url) as response:
                return response.status == 200
        return False

    async def metrics(self) -> dict[str, float]:
        """The controller's /metrics, one value per sample line (labels kept in the key)."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            text = await response.text()
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                samples[key] = float(value)
        return samples


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def controller(
    kubeconfig: str, namespace: str, kinds: str, *options: str
) -> AsyncIterator[Process]:
    """`jobcore run` for `kinds` in `namespace` (with `options`), until the block ends."""
    port, probe_port = _free_port(), _free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "controllers.cli",
        "--log-level",
        "warning",
        "run",
        "--kubeconfig",
        kubeconfig,
        "--kinds",
        kinds,
        "--namespace",
        namespace,
        "--metrics-bind-address",
        f"127.0.0.1:{port}",
        "--health-probe-bind-address",
        f"127.0.0.1:{probe_port}",
        *options,
    )
    proc = Process(process.pid, port, probe_port)
    try:

        async def serving() -> bool:
            with contextlib.suppress(aiohttp.ClientError):
                return "workqueue_depth" in str(await proc.metrics())
            return False

        await eventually(serving, timeout=30, interval=0.1)
        yield proc
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), timeout=40)


def total(samples: dict[str, float], name: str, label: str = "") -> float:
    """The sum of a metric's samples, of those whose labels hold `label` if given."""
    return sum(v for k, v in samples.items() if k.startswith(name + "{") and label in k)


def requests(samples: dict[str, float], method: str | None = None) -> float:
    return total(samples, "rest_client_requests_total", f'method="{method}"' if method else "")


def quantile(samples: dict[str, float], q: float) -> float:
    """A quantile of the reconcile-time histogram, by linear interpolation in its buckets."""
    buckets = _buckets(samples, "controller_runtime_reconcile_time_seconds")
    total = buckets[-1][1] if buckets else 0.0
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= q * total:
            if count == lower_count or bound == float("inf"):
                return lower_bound
            return lower_bound + (bound - lower_bound) * (q * total - lower_count) / (
                count - lower_count
            )
        lower_bound, lower_count = bound, count
    return lower_bound


def _buckets(samples: dict[str, float], histogram: str) -> list[tuple[float, float]]:
    """A histogram's cumulative buckets as (upper bound, count), lowest bound first."""
    prefix = f"{histogram}_bucket{{"
    return sorted(
        (float(key.split('le="')[1].split('"')[0]), value)
        for key, value in samples.items()
        if key.startswith(prefix)
    )


def loop_lag(before: dict[str, float], after: dict[str, float]) -> tuple[float, float]:
    """Between two readings of /metrics: how many of the event loop monitor's wake-ups came
    more than 0.1 s late, and the bucket bound the latest one stayed within (inf: above 10 s).
    """
    histogram = "jobcore_event_loop_lag_seconds"
    old = dict(_buckets(before, histogram))
    counts = [(bound, count - old.get(bound, 0.0)) for bound, count in _buckets(after, histogram)]
    everything = counts[-1][1] if counts else 0.0
    within = dict(counts).get(0.1, 0.0)
    longest = next((bound for bound, count in counts if count >= everything), 0.0)
    return everything - within, longest
