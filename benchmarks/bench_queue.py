"""Measure WorkQueue add+get+done cycles per second on one core, with metrics on and off.

Run: python -m benchmarks.bench_queue [--keys N] [--cycles N] [--repeats N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid

from benchmarks._common import machine
from jobcore import QueueShutDown
from jobcore import WorkQueue

_WORKERS = 10


async def _interleaved(queue: WorkQueue[str], keys: list[str], cycles: int) -> float:
    """Steady state: each key is added, handed out and finished before the next."""
    start = time.perf_counter()
    for i in range(cycles):
        queue.add(keys[i % len(keys)])
        item = await queue.get()
        queue.done(item)
    return time.perf_counter() - start


async def _batched(queue: WorkQueue[str], keys: list[str], cycles: int) -> float:
    """Backlog: all keys are added, then drained, so the queue holds len(keys) items."""
    start = time.perf_counter()
    for _ in range(cycles // len(keys)):
        for key in keys:
            queue.add(key)
        for _ in keys:
            item = await queue.get()
            queue.done(item)
    return time.perf_counter() - start


async def _workers(queue: WorkQueue[str], keys: list[str], cycles: int) -> float:
    """Idle workers blocked in get(): every add wakes one (the slow path, with task switches)."""
    rounds = cycles // len(keys)
    finished = asyncio.Event()
    handled = 0

    async def worker() -> None:
        nonlocal handled
        while True:
            try:
                item = await queue.get()
            except QueueShutDown:
                return
            queue.done(item)
            handled += 1
            if handled % len(keys) == 0:
                finished.set()

    tasks = [asyncio.create_task(worker()) for _ in range(_WORKERS)]
    await asyncio.sleep(0)
    start = time.perf_counter()
    for _ in range(rounds):
        finished.clear()
        for key in keys:
            queue.add(key)
        await finished.wait()
    elapsed = time.perf_counter() - start
    await queue.shutdown()
    await asyncio.gather(*tasks)
    return elapsed


def _pin_to_one_core() -> str:
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned"
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return f"pinned to core {core}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--cycles", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cycles = args.cycles - args.cycles % args.keys
    keys = [f"namespace/job-{i}" for i in range(args.keys)]

    print(f"machine: {machine()}; {_pin_to_one_core()}")
    print(f"{cycles:,} add+get+done cycles over {args.keys:,} keys, best of {args.repeats}")
    for pattern in (_interleaved, _batched, _workers):
        for metrics in (True, False):
            best = min(
                asyncio.run(
                    pattern(
                        WorkQueue(name=f"bench-{uuid.uuid4().hex[:8]}" if metrics else None),
                        keys,
                        cycles,
                    )
                )
                for _ in range(args.repeats)
            )
            label = f"{pattern.__name__.strip('_')}, metrics {'on' if metrics else 'off'}"
            print(f"  {label:<24} {cycles / best:>12,.0f} cycles/s  ({best / cycles * 1e6:.2f} us)")


if __name__ == "__main__":
    main()
