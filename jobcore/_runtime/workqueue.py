"""Hand each key to one worker at a time, deduplicated, delayed and rate limited.

An asyncio port of client-go's workqueue (Type, delaying_queue, rate_limiting_queue): a key
added many times while it waits is processed once; a key added while a worker holds it is
processed exactly once more after `done`; never two workers on the same key at once.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import weakref
from collections import deque
from collections.abc import Callable
from collections.abc import Hashable
from time import monotonic
from typing import Generic
from typing import NamedTuple
from typing import TypeVar

from prometheus_client import Counter
from prometheus_client import Gauge
from prometheus_client import Histogram

from jobcore._runtime import metrics
from jobcore._runtime.errors import JobcoreError
from jobcore._runtime.ratelimit import RateLimiter
from jobcore._runtime.ratelimit import default_controller_rate_limiter

__all__ = ["QueueShutDown", "WorkQueue"]

T = TypeVar("T", bound=Hashable)


class QueueShutDown(JobcoreError):
    """The queue is shut down and has nothing left to hand out: the worker should exit."""


class _Metrics(NamedTuple):
    """A named queue's labelled metric children, bound once so the hot path skips `.labels()`."""

    adds: Counter
    retries: Counter
    queue_duration: Histogram
    work_duration: Histogram


class WorkQueue(Generic[T]):
    """Deduplicating, delaying, rate-limited work queue for one event loop.

    Add/get/done follow client-go: `_dirty` holds keys that need processing (value: when they
    were added, for the latency metric), `_processing` the keys handed out (value: when).
    `name` labels the queue's metrics, so it must be unique in the process; None: no metrics.
    """

    def __init__(self, *, name: str | None = None, rate_limiter: RateLimiter | None = None) -> None:
        self.name = name
        self._rate_limiter: RateLimiter = (
            default_controller_rate_limiter() if rate_limiter is None else rate_limiter
        )
        self._queue: deque[T] = deque()
        self._dirty: dict[T, float] = {}
        self._processing: dict[T, float] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._idle = asyncio.Event()  # Set by `done` when a draining shutdown may finish.
        # Delayed adds: a heap of (ready_at, seq, item) plus each item's earliest ready_at.
        # Heap entries superseded by an earlier ready_at are skipped when they surface.
        self._delayed: list[tuple[float, int, T]] = []
        self._ready_at: dict[T, float] = {}
        self._seq = itertools.count()
        self._timer: asyncio.Handle | None = None
        self._timer_at = 0.0
        """When `_timer` fires, on the loop's clock: uvloop arms a timer due within half a
        millisecond as a plain Handle, with no `when()`."""
        self._metrics = None if name is None else self._bind_metrics(name)

    def _bind_metrics(self, name: str) -> _Metrics:
        """Bind the counters; gauges are computed at scrape time, costing nothing per call."""
        ref = weakref.ref(self)
        _watch(metrics.workqueue_depth.labels(name), ref, lambda q: len(q._dirty))
        _watch(metrics.workqueue_unfinished_work_seconds.labels(name), ref, _unfinished_work)
        _watch(metrics.workqueue_longest_running_processor_seconds.labels(name), ref, _longest)
        return _Metrics(
            adds=metrics.workqueue_adds_total.labels(name),
            retries=metrics.workqueue_retries_total.labels(name),
            queue_duration=metrics.workqueue_queue_duration_seconds.labels(name),
            work_duration=metrics.workqueue_work_duration_seconds.labels(name),
        )

    def __len__(self) -> int:
        """Items ready to be handed out (not those being processed or still delayed)."""
        return len(self._queue)

    def waiting(self, item: T) -> bool:
        """Whether `item` is ready to be handed out and not yet handed out."""
        return item in self._dirty and item not in self._processing

    @property
    def processing(self) -> int:
        """Items handed out and not yet `done`."""
        return len(self._processing)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, item: T) -> None:
        """Mark `item` as needing processing; a no-op if it already waits or after shutdown."""
        if self._shutting_down or item in self._dirty:
            return
        bound = self._metrics
        if bound is None:
            self._dirty[item] = 0.0
        else:
            bound.adds.inc()
            self._dirty[item] = monotonic()
        if item in self._processing:
            return  # `done` queues it again, so no second worker gets it meanwhile.
        self._queue.append(item)
        if self._getters:
            self._wake_getter()

    def get_nowait(self) -> T:
        """Hand out the next item; raises asyncio.QueueEmpty (or QueueShutDown) if none."""
        if not self._queue:
            if self._shutting_down:
                raise QueueShutDown
            raise asyncio.QueueEmpty
        item = self._queue.popleft()
        added = self._dirty.pop(item)
        metrics = self._metrics
        if metrics is None:
            self._processing[item] = 0.0
        else:
            now = monotonic()
            metrics.queue_duration.observe(now - added)
            self._processing[item] = now
        return item

    async def get(self) -> T:
        """Wait for the next item; the caller must call `done(item)` when finished with it.

        Raises QueueShutDown once shut down with nothing left queued.
        """
        if self._queue:  # Fast path: no future, no suspension.
            return self.get_nowait()
        loop = asyncio.get_running_loop()
        while not self._queue:
            if self._shutting_down:
                raise QueueShutDown
            getter = loop.create_future()
            self._getters.append(getter)
            try:
                await getter
            except BaseException:
                getter.cancel()  # A no-op if it was woken already.
                if getter in self._getters:
                    self._getters.remove(getter)
                if self._queue and not getter.cancelled():
                    self._wake_getter()  # Woken for an item we will not take: pass it on.
                raise
        return self.get_nowait()

    def done(self, item: T) -> None:
        """Finish processing `item`; if it was added meanwhile, queue it again (once)."""
        started = self._processing.pop(item, None)
        if started is None:
            raise ValueError(f"done({item!r}) but it is not being processed")
        if self._metrics is not None:
            self._metrics.work_duration.observe(monotonic() - started)
        if item in self._dirty:
            self._queue.append(item)
            if self._getters:
                self._wake_getter()
        elif self._shutting_down and not self._processing:
            self._idle.set()

    def add_after(self, item: T, delay: float) -> None:
        """Add `item` once `delay` seconds pass; an item already delayed keeps the earlier time.

        One loop timer serves all delayed items: it is set for the earliest one.
        """
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        ready_at = loop.time() + delay
        current = self._ready_at.get(item)
        if current is not None and current <= ready_at:
            return
        self._ready_at[item] = ready_at
        heapq.heappush(self._delayed, (ready_at, next(self._seq), item))
        timer = self._timer
        if timer is None or ready_at < self._timer_at:
            if timer is not None:
                timer.cancel()
            self._arm(loop, ready_at)

    def _add_due(self, scheduled: float) -> None:
        """Timer callback: add every delayed item that is due, then re-arm for the next one."""
        self._timer = None
        loop = asyncio.get_running_loop()
        # The loop may run a timer a clock tick early; what it was set for is due regardless.
        now = max(loop.time(), scheduled)
        delayed, ready_at = self._delayed, self._ready_at
        while delayed and delayed[0][0] <= now:
            due, _, item = heapq.heappop(delayed)
            if ready_at.get(item) == due:
                del ready_at[item]
                self.add(item)
        while delayed and ready_at.get(delayed[0][2]) != delayed[0][0]:
            heapq.heappop(delayed)  # Superseded entry: no timer for it.
        if delayed:
            self._arm(loop, delayed[0][0])

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        self._timer, self._timer_at = loop.call_at(when, self._add_due, when), when

    def add_rate_limited(self, item: T, *, at_least: float = 0.0) -> None:
        """Add `item` after its rate limiter's delay, or `at_least` seconds if longer: the
        retry path for a failed item."""
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retries.inc()
        self.add_after(item, max(self._rate_limiter.when(item), at_least))

    def forget(self, item: T) -> None:
        """Reset `item`'s backoff (it succeeded); it still runs if queued."""
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._rate_limiter.num_requeues(item)

    async def shutdown(self, *, drain: bool = True, timeout: float | None = None) -> None:
        """Stop taking adds, drop delayed adds, and wake getters so idle workers exit.

        Items already queued are still handed out. With `drain`, waits until every item
        handed out is `done` (in-flight work finishes), or until `timeout` seconds pass.
        """
        self._shutting_down = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._delayed.clear()
        self._ready_at.clear()
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
        if not drain:
            return
        try:
            async with asyncio.timeout(timeout):
                while self._processing:
                    self._idle.clear()
                    await self._idle.wait()
        except TimeoutError:
            return

    def _wake_getter(self) -> None:
        """Wake the longest-waiting live getter for one newly queued item."""
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return


def _watch(
    gauge: Gauge,
    ref: weakref.ref[WorkQueue[T]],
    read: Callable[[WorkQueue[T]], float],
) -> None:
    """Make `gauge` read the queue when scraped; a weak reference, so the queue can be freed."""

    def sample() -> float:
        queue = ref()
        return 0.0 if queue is None else read(queue)

    gauge.set_function(sample)


# A scrape may come from another thread (prometheus_client's own HTTP server): copy the start
# times in one C call before iterating, so the loop cannot resize the dict under the iteration.


def _unfinished_work(queue: WorkQueue[T]) -> float:
    started = list(queue._processing.values())
    now = monotonic()
    return sum(now - start for start in started)


def _longest(queue: WorkQueue[T]) -> float:
    started = list(queue._processing.values())
    return monotonic() - min(started) if started else 0.0
