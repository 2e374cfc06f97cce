"""Unit tests for WorkQueue: dedupe, one worker per key, delayed and rate-limited adds, shutdown."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from collections import deque
from collections.abc import Hashable
from typing import Any
from typing import TypeVar

import pytest
import uvloop
from hypothesis import given
from hypothesis import strategies as st

from jobcore._runtime.metrics import REGISTRY
from jobcore._runtime.ratelimit import ItemExponentialFailureRateLimiter
from jobcore._runtime.workqueue import QueueShutDown
from jobcore._runtime.workqueue import WorkQueue

T = TypeVar("T", bound=Hashable)


class FixedLimiter:
    """Rate limiter returning a fixed delay and counting the calls."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.requeues: Counter[Hashable] = Counter()

    def when(self, item: Hashable) -> float:
        self.requeues[item] += 1
        return self.delay

    def forget(self, item: Hashable) -> None:
        del self.requeues[item]

    def num_requeues(self, item: Hashable) -> int:
        return self.requeues[item]


def drain(queue: WorkQueue[T]) -> list[T]:
    """Hand out and finish everything that is ready now, in order."""
    items = []
    while len(queue):
        item = queue.get_nowait()
        queue.done(item)
        items.append(item)
    return items


def handing_out(*items: str) -> WorkQueue[str]:
    """A queue of `items`, the first of them handed out to a worker and not yet done."""
    queue: WorkQueue[str] = WorkQueue()
    for item in items:
        queue.add(item)
    assert queue.get_nowait() == items[0]
    return queue


async def draining(queue: WorkQueue[str]) -> asyncio.Task[None]:
    """A draining shutdown of `queue`, started and, its first step run, still waiting."""
    shutdown = asyncio.create_task(queue.shutdown(drain=True))
    await asyncio.sleep(0)
    assert not shutdown.done()
    return shutdown


# --- add / get / done -------------------------------------------------------------------------


def test_add_deduplicates_while_waiting_and_keeps_fifo_order() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for item in ["a", "b", "a", "c", "b", "a"]:
        queue.add(item)
    assert len(queue) == 3
    assert drain(queue) == ["a", "b", "c"]
    with pytest.raises(asyncio.QueueEmpty):
        queue.get_nowait()


def test_item_being_processed_is_not_handed_out_again_until_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert queue.get_nowait() == "a"
    assert (len(queue), queue.processing) == (0, 1)
    queue.add("a")
    assert len(queue) == 0  # waits for done, not in the ready queue
    with pytest.raises(asyncio.QueueEmpty):
        queue.get_nowait()
    queue.done("a")
    assert (len(queue), queue.processing) == (1, 0)
    assert queue.get_nowait() == "a"


def test_adds_during_processing_collapse_to_exactly_one_more_run() -> None:
    queue = handing_out("a")
    for _ in range(5):
        queue.add("a")
    queue.done("a")
    assert drain(queue) == ["a"]
    assert (len(queue), queue.processing) == (0, 0)


def test_done_of_an_item_not_being_processed_raises() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    with pytest.raises(ValueError, match="not being processed"):
        queue.done("a")
    queue.done(queue.get_nowait())
    with pytest.raises(ValueError):
        queue.done("a")


@given(st.lists(st.one_of(st.sampled_from("abcd"), st.integers(0, 3), st.none()), max_size=80))
def test_matches_a_reference_model(ops: list[str | int | None]) -> None:
    """Strings add, None gets, an int finishes the n-th item in flight."""
    queue: WorkQueue[str] = WorkQueue()
    ready: deque[str] = deque()
    dirty: set[str] = set()
    in_flight: list[str] = []
    for op in ops:
        if isinstance(op, str):
            queue.add(op)
            if op not in dirty:
                dirty.add(op)
                if op not in in_flight:
                    ready.append(op)
        elif op is None:
            if not ready:
                with pytest.raises(asyncio.QueueEmpty):
                    queue.get_nowait()
                continue
            item = queue.get_nowait()
            assert item == ready.popleft()
            assert item not in in_flight
            dirty.discard(item)
            in_flight.append(item)
        elif in_flight:
            item = in_flight.pop(op % len(in_flight))
            queue.done(item)
            if item in dirty:
                ready.append(item)
        assert (len(queue), queue.processing) == (len(ready), len(in_flight))


async def test_get_waits_for_an_add() -> None:
    queue: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not getter.done()
    queue.add("a")
    assert await getter == "a"
    assert queue.processing == 1


async def test_get_does_not_suspend_when_an_item_is_ready() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    coroutine = queue.get()
    with pytest.raises(StopIteration) as stopped:
        coroutine.send(None)
    assert stopped.value.value == "a"


async def test_a_getter_cancelled_after_its_wakeup_passes_the_item_on() -> None:
    queue: WorkQueue[str] = WorkQueue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("a")  # wakes `first`, which is cancelled before it runs
    first.cancel()
    assert await asyncio.wait_for(second, 1) == "a"
    assert first.cancelled()


async def test_a_cancelled_waiting_getter_does_not_swallow_an_item() -> None:
    queue: WorkQueue[str] = WorkQueue()
    cancelled = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    for _ in range(10):  # e.g. a worker polling with a timeout
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(queue.get(), 0.001)
    assert not queue._getters  # cancelled getters do not pile up
    waiting = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("a")
    assert await asyncio.wait_for(waiting, 1) == "a"


async def test_no_key_is_handed_to_two_workers_and_no_add_is_lost() -> None:
    """Many workers and adders on few keys: one worker per key, every add followed by a run."""
    queue: WorkQueue[str] = WorkQueue()
    rng = random.Random(1234)
    keys = [f"k{i}" for i in range(8)]
    in_flight: Counter[str] = Counter()
    clock = 0  # a logical clock ordering adds and run starts
    last_add: dict[str, int] = {}
    last_start: dict[str, int] = {}
    runs = 0

    async def worker() -> None:
        nonlocal clock, runs
        while True:
            try:
                key = await queue.get()
            except QueueShutDown:
                return
            in_flight[key] += 1
            assert in_flight[key] == 1, f"{key} handed to two workers"
            clock += 1
            last_start[key] = clock
            for _ in range(rng.randrange(4)):
                await asyncio.sleep(0)
            in_flight[key] -= 1
            runs += 1
            queue.done(key)

    async def adder() -> None:
        nonlocal clock
        for _ in range(500):
            key = rng.choice(keys)
            queue.add(key)
            clock += 1
            last_add[key] = clock
            if rng.random() < 0.5:
                await asyncio.sleep(0)

    workers = [asyncio.create_task(worker()) for _ in range(20)]
    await asyncio.gather(*(adder() for _ in range(4)))
    await queue.shutdown(drain=True, timeout=5)
    await asyncio.wait_for(asyncio.gather(*workers), 5)
    assert all(last_start[key] > added for key, added in last_add.items())
    assert len(last_start) == len(keys)
    assert runs < 2000  # adds were deduplicated
    assert (len(queue), queue.processing) == (0, 0)


# --- delayed and rate-limited adds ------------------------------------------------------------


async def test_add_after_hands_items_out_in_ready_order() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0.03)
    queue.add_after("b", 0.01)
    queue.add_after("c", 0.02)
    assert len(queue) == 0
    got = [await asyncio.wait_for(queue.get(), 1) for _ in range(3)]
    assert got == ["b", "c", "a"]


def test_delayed_adds_work_on_uvloop() -> None:
    """`jobcore run` runs on uvloop, which arms a timer due within half a millisecond as a
    plain handle, with no `when()`."""

    async def scenario() -> list[str]:
        queue: WorkQueue[str] = WorkQueue()
        queue.add_after("a", 0.05)
        queue.add_after("b", 0.0002)  # earlier: re-arms the one timer, due almost at once
        queue.add_after("c", 0.0001)  # earlier still
        queue.add_after("d", 0.03)
        return [await asyncio.wait_for(queue.get(), 1) for _ in range(4)]

    got = uvloop.run(scenario())
    assert set(got[:2]) == {"b", "c"}  # due within the same millisecond of uvloop's clock
    assert got[2:] == ["d", "a"]


async def test_add_after_without_delay_adds_at_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0)
    queue.add_after("b", -1.0)
    assert drain(queue) == ["a", "b"]


async def test_add_after_keeps_the_earliest_time_and_one_timer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue: WorkQueue[str] = WorkQueue()
    loop = asyncio.get_running_loop()
    armed: list[float] = []  # delays of the timers the queue set
    call_at = loop.call_at

    def spy(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        if getattr(callback, "__self__", None) is queue:
            armed.append(when - loop.time())
        return call_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", spy)
    queue.add_after("a", 10.0)
    queue.add_after("a", 0.02)  # earlier: re-arms the timer
    queue.add_after("a", 5.0)  # later: ignored
    for i in range(100):
        queue.add_after(f"later-{i}", 20.0 + i)  # after the earliest: no new timer
    assert len(armed) == 2
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    assert len(armed) == 3  # re-armed once, for "later-0", not for a's superseded entries
    assert armed[-1] > 19.0
    queue.done("a")
    await queue.shutdown()


async def test_delayed_add_of_an_already_queued_item_is_deduplicated() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add_after("a", 0.01)
    await asyncio.sleep(0.03)
    assert drain(queue) == ["a"]


async def test_add_rate_limited_waits_the_limiters_delay_and_forget_resets() -> None:
    queue: WorkQueue[str] = WorkQueue(rate_limiter=ItemExponentialFailureRateLimiter(0.01, 1.0))
    loop = asyncio.get_running_loop()
    for expected_delay in (0.01, 0.02):
        started = loop.time()
        queue.add_rate_limited("a")
        assert len(queue) == 0
        queue.done(await asyncio.wait_for(queue.get(), 1))
        assert loop.time() - started >= expected_delay * 0.9
    assert queue.num_requeues("a") == 2
    queue.forget("a")
    assert queue.num_requeues("a") == 0


async def test_add_rate_limited_uses_the_given_limiter() -> None:
    limiter = FixedLimiter(0.0)
    queue: WorkQueue[str] = WorkQueue(rate_limiter=limiter)
    queue.add_rate_limited("a")
    queue.add_rate_limited("a")
    assert drain(queue) == ["a"]
    assert queue.num_requeues("a") == 2


# --- shutdown ---------------------------------------------------------------------------------


async def test_shutdown_wakes_idle_getters_with_queue_shut_down() -> None:
    queue: WorkQueue[str] = WorkQueue()
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await asyncio.sleep(0)
    await queue.shutdown()
    assert queue.shutting_down
    for getter in getters:
        with pytest.raises(QueueShutDown):
            await getter
    with pytest.raises(QueueShutDown):
        queue.get_nowait()


async def test_shutdown_still_hands_out_queued_items_then_raises() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    await queue.shutdown()
    assert await queue.get() == "a"
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_shutdown_waits_for_in_flight_work() -> None:
    queue = handing_out("a", "b")
    shutdown = await draining(queue)
    await asyncio.sleep(0.01)
    assert not shutdown.done()
    queue.done("a")
    assert queue.get_nowait() == "b"  # the worker moves straight on to the next queued item
    await asyncio.sleep(0.01)
    assert not shutdown.done()
    queue.done("b")
    await asyncio.wait_for(shutdown, 1)
    assert (len(queue), queue.processing) == (0, 0)


async def test_shutdown_still_runs_an_item_added_while_it_was_processing() -> None:
    queue = handing_out("a")
    queue.add("a")
    shutdown = await draining(queue)
    queue.done("a")
    assert await queue.get() == "a"
    await asyncio.sleep(0.01)
    assert not shutdown.done()
    queue.done("a")
    await asyncio.wait_for(shutdown, 1)
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_shutdown_drain_stops_at_handed_out_work_not_queued_work() -> None:
    """Like client-go: queued items with no worker left to take them do not block shutdown."""
    queue = handing_out("a", "b")
    shutdown = await draining(queue)
    queue.done("a")
    await asyncio.wait_for(shutdown, 1)
    assert len(queue) == 1


async def test_shutdown_gives_up_after_the_timeout() -> None:
    queue = handing_out("stuck")
    await asyncio.wait_for(queue.shutdown(drain=True, timeout=0.02), 1)
    assert queue.processing == 1


async def test_shutdown_without_drain_returns_at_once() -> None:
    queue = handing_out("a")
    await asyncio.wait_for(queue.shutdown(drain=False), 0.01)
    queue.done("a")  # still allowed afterwards


async def test_adds_after_shutdown_are_ignored_and_delayed_adds_are_cancelled() -> None:
    limiter = FixedLimiter(0.0)
    queue: WorkQueue[str] = WorkQueue(rate_limiter=limiter)
    queue.add_after("delayed", 0.01)
    await queue.shutdown()
    queue.add("a")
    queue.add_after("b", 0)
    queue.add_after("c", 0.001)
    queue.add_rate_limited("d")
    await asyncio.sleep(0.03)
    assert len(queue) == 0
    assert limiter.num_requeues("d") == 0
    await queue.shutdown()  # a second shutdown is harmless


# --- metrics ----------------------------------------------------------------------------------


def sample(metric: str, name: str) -> float | None:
    return REGISTRY.get_sample_value(metric, {"name": name})


async def test_named_queue_records_metrics() -> None:
    name = f"test-{uuid.uuid4().hex}"
    queue: WorkQueue[str] = WorkQueue(name=name, rate_limiter=FixedLimiter(0.0))
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert sample("workqueue_adds_total", name) == 2
    assert sample("workqueue_depth", name) == 2
    await asyncio.sleep(0.01)
    item = await queue.get()
    assert sample("workqueue_depth", name) == 1
    assert sample("workqueue_queue_duration_seconds_count", name) == 1
    assert (sample("workqueue_queue_duration_seconds_sum", name) or 0) >= 0.009
    await asyncio.sleep(0.02)
    assert (sample("workqueue_longest_running_processor_seconds", name) or 0) >= 0.019
    assert (sample("workqueue_unfinished_work_seconds", name) or 0) >= 0.019
    queue.done(item)
    assert sample("workqueue_work_duration_seconds_count", name) == 1
    assert (sample("workqueue_work_duration_seconds_sum", name) or 0) >= 0.019
    assert sample("workqueue_longest_running_processor_seconds", name) == 0
    assert sample("workqueue_unfinished_work_seconds", name) == 0
    queue.add_rate_limited("c")
    assert sample("workqueue_retries_total", name) == 1
    assert sample("workqueue_adds_total", name) == 3
    assert sample("workqueue_depth", name) == 2


def _recorded_samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    counters = {"workqueue_adds", "workqueue_retries", "workqueue_queue_duration_seconds"}
    counters.add("workqueue_work_duration_seconds")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for metric in REGISTRY.collect()
        if metric.name in counters
        for s in metric.samples
    }


async def test_unnamed_queue_records_no_metrics() -> None:
    before = _recorded_samples()
    queue: WorkQueue[str] = WorkQueue(rate_limiter=FixedLimiter(0.0))
    queue.add("a")
    queue.add_rate_limited("b")
    queue.done(await queue.get())
    queue.done(await queue.get())
    assert _recorded_samples() == before
