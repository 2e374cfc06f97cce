"""Reconcile latency: from a change written to the API server to the start of its reconcile.

    python -m benchmarks.bench_latency [--rate 100] [--seconds 10] [--objects 200]

Target (issue 2): p50 <= 20 ms and p99 <= 100 ms under 100 changes per second.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from benchmarks._common import cluster
from benchmarks._common import machine
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from jobcore import CONFIGMAPS
from jobcore import Client
from jobcore import Controller
from jobcore import Informer
from jobcore import Request
from jobcore import Result
from jobcore.testing import background

NAMESPACE = "bench"


class StampReader:
    """Records, per reconcile, how long ago the change it sees was sent."""

    def __init__(self, informer: Informer) -> None:
        self.informer = informer
        self.latencies: list[float] = []
        self.seen: dict[Request, str] = {}

    async def reconcile(self, request: Request) -> Result:
        now = time.time()
        obj = self.informer.get(request.name, request.namespace)
        if obj is not None:
            stamp = obj["data"]["sent"]
            if self.seen.get(request) != stamp and stamp != "0":
                self.latencies.append(now - float(stamp))
                self.seen[request] = stamp
        return Result()


async def drive(client: Client, *, rate: float, seconds: float, objects: int) -> int:
    """Patch objects round-robin at `rate` changes per second; return how many were sent."""
    interval, sent = 1.0 / rate, 0
    start = time.perf_counter()
    tasks = []
    while (elapsed := time.perf_counter() - start) < seconds:
        name = f"obj-{sent % objects}"
        patch = {"data": {"sent": repr(time.time())}}
        tasks.append(asyncio.create_task(client.patch(CONFIGMAPS, name, patch, NAMESPACE)))
        sent += 1
        await asyncio.sleep(max(0.0, sent * interval - elapsed))
    await asyncio.gather(*tasks)
    return sent


async def main(rate: float, seconds: float, objects: int) -> None:
    async with cluster(NAMESPACE) as client:
        for i in range(objects):
            body = {"metadata": {"name": f"obj-{i}", "namespace": NAMESPACE}, "data": {"sent": "0"}}
            await client.create(CONFIGMAPS, body)
        informer = Informer(client, CONFIGMAPS, namespace=NAMESPACE)
        reconciler = StampReader(informer)
        controller = Controller("latency", reconciler, max_concurrent_reconciles=4)
        controller.watch(informer)
        async with background(informer.run()), background(controller.run()):
            await informer.wait_for_sync()
            sent = await drive(client, rate=rate, seconds=seconds, objects=objects)
            await asyncio.sleep(1.0)
    samples = sorted(reconciler.latencies)
    p50 = statistics.quantiles(samples, n=100)[49] * 1000
    p99 = statistics.quantiles(samples, n=100)[98] * 1000
    print(f"machine: {machine()}")
    print(f"changes sent: {sent} at {rate:g}/s; reconciles measured: {len(samples)}")
    print_table(
        [
            ("p50 change -> reconcile start", f"{p50:.1f} ms", "<= 20 ms"),
            ("p99 change -> reconcile start", f"{p99:.1f} ms", "<= 100 ms"),
        ]
    )


if __name__ == "__main__":
    run_benchmark(main, __doc__, rate=(float, 100.0), seconds=(float, 10.0), objects=(int, 200))
