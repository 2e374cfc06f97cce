"""Unit tests for Controller: outcomes of a reconcile, metrics, concurrency and shutdown.

The reconcilers are plain classes and the controller uses its real WorkQueue; `run()` is
started with no informers, so its workers start at once and requests are added by hand.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections import defaultdict
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from contextlib import asynccontextmanager

import pytest

from jobcore._runtime.controller import Controller
from jobcore._runtime.controller import Reconciler
from jobcore._runtime.controller import Result
from jobcore._runtime.controller import reconciler_from
from jobcore._runtime.errors import ConflictError
from jobcore._runtime.errors import TerminalError
from jobcore._runtime.handler import Request
from jobcore._runtime.metrics import REGISTRY
from jobcore._runtime.ratelimit import ItemExponentialFailureRateLimiter
from jobcore._runtime.resources import ObjectKey

A, B, C = ObjectKey("ns", "a"), ObjectKey("ns", "b"), ObjectKey("ns", "c")


def unique_name(prefix: str = "test") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def fast_limiter() -> ItemExponentialFailureRateLimiter:
    return ItemExponentialFailureRateLimiter(base_delay=0.001, max_delay=0.01)


def fast_controller(
    reconcile: Callable[[Request], Awaitable[Result]], *, workers: int
) -> Controller:
    """A controller of `workers` workers over `reconcile` whose retries wait a few ms."""
    return Controller(
        unique_name(),
        reconciler_from(reconcile),
        max_concurrent_reconciles=workers,
        rate_limiter=fast_limiter(),
    )


def sample(metric: str, controller: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(metric, {"controller": controller, **labels})
    return 0.0 if value is None else value


def reconciles(controller: str, result: str) -> float:
    return sample("controller_runtime_reconcile_total", controller, result=result)


async def wait_until(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.002)


@asynccontextmanager
async def running(controller: Controller) -> AsyncIterator[asyncio.Task[None]]:
    """Run the controller's workers for the block, then shut down and check `run` returned."""
    task = asyncio.create_task(controller.run())
    try:
        yield task
    finally:
        await controller.shutdown(timeout=2)
        await asyncio.wait_for(task, 2)


class Recording:
    """Records every request it is asked to reconcile; outcome chosen per call by `decide`."""

    def __init__(
        self, decide: Callable[[Request, int], Result | BaseException] | None = None
    ) -> None:
        self.calls: list[Request] = []
        self.times: dict[Request, list[float]] = defaultdict(list)
        self.count: Counter[Request] = Counter()
        self._decide = decide or (lambda _request, _n: Result())

    async def reconcile(self, request: Request) -> Result:
        self.calls.append(request)
        self.times[request].append(time.monotonic())
        self.count[request] += 1
        outcome = self._decide(request, self.count[request])
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


# --- outcomes -----------------------------------------------------------------------------------


async def test_success_is_forgotten_and_counted() -> None:
    name = unique_name()

    def decide(_request: Request, attempt: int) -> Result | BaseException:
        return RuntimeError("first try fails") if attempt == 1 else Result()

    reconciler = Recording(decide)
    controller = Controller(name, reconciler, rate_limiter=fast_limiter())
    await controller.reconcile_one(A)
    assert controller.queue.num_requeues(A) == 1
    await controller.reconcile_one(A)
    assert controller.queue.num_requeues(A) == 0, "success resets the backoff"
    assert reconciles(name, "success") == 1
    assert reconciles(name, "error") == 1
    assert sample("controller_runtime_reconcile_errors_total", name) == 1


async def test_success_in_a_running_controller_does_not_requeue() -> None:
    name = unique_name()
    reconciler = Recording()
    controller = Controller(name, reconciler, rate_limiter=fast_limiter())
    async with running(controller):
        controller.queue.add(A)
        controller.queue.add(B)
        await wait_until(lambda: reconciles(name, "success") == 2)
        await asyncio.sleep(0.05)
    assert reconciler.calls == [A, B]
    assert controller.queue.num_requeues(A) == 0
    assert reconciles(name, "error") == 0
    histogram = "controller_runtime_reconcile_time_seconds_count"
    assert sample(histogram, name) == 2


async def test_exception_requeues_with_backoff_and_the_worker_keeps_going() -> None:
    name = unique_name()

    def decide(request: Request, _attempt: int) -> Result | BaseException:
        return ConflictError(409, "Conflict", "stale") if request == A else Result()

    reconciler = Recording(decide)
    controller = Controller(name, reconciler, rate_limiter=fast_limiter())
    async with running(controller):
        controller.queue.add(A)
        await wait_until(lambda: reconciler.count[A] >= 4)
        assert controller.queue.num_requeues(A) >= 3
        controller.queue.add(B)
        controller.queue.add(C)
        await wait_until(lambda: reconciler.count[B] == 1 and reconciler.count[C] == 1)
        await wait_until(lambda: reconciler.count[A] >= 6)
    gaps = [t2 - t1 for t1, t2 in zip(reconciler.times[A], reconciler.times[A][1:], strict=False)]
    assert all(gap >= 0.0009 for gap in gaps), f"retries are delayed by the rate limiter: {gaps}"
    assert controller.queue.num_requeues(A) >= 5
    assert reconciles(name, "error") >= 6
    assert reconciles(name, "success") == 2
    assert sample("controller_runtime_reconcile_errors_total", name) == reconciles(name, "error")


async def test_num_requeues_grows_with_each_failure() -> None:
    reconciler = Recording(lambda _request, _attempt: ValueError("boom"))
    controller = Controller(unique_name(), reconciler, rate_limiter=fast_limiter())
    for expected in (1, 2, 3):
        await controller.reconcile_one(A)
        assert controller.queue.num_requeues(A) == expected
    assert controller.queue.num_requeues(B) == 0


async def test_terminal_error_is_not_requeued() -> None:
    name = unique_name()
    reconciler = Recording(lambda _request, _attempt: TerminalError("spec is invalid"))
    controller = Controller(name, reconciler, rate_limiter=fast_limiter())
    async with running(controller):
        controller.queue.add(A)
        await wait_until(lambda: reconciler.count[A] == 1)
        await asyncio.sleep(0.1)
        assert reconciler.count[A] == 1, "not retried"
        assert controller.queue.num_requeues(A) == 0
        controller.queue.add(A)  # the object changed again
        await wait_until(lambda: reconciler.count[A] == 2)
    assert sample("controller_runtime_terminal_reconcile_errors_total", name) == 2
    assert sample("controller_runtime_reconcile_errors_total", name) == 2
    assert reconciles(name, "error") == 2
    assert reconciles(name, "success") == 0


async def test_requeue_after_runs_again_after_the_delay() -> None:
    name = unique_name()

    def decide(_request: Request, attempt: int) -> Result | BaseException:
        return Result(requeue_after=0.05) if attempt == 1 else Result()

    reconciler = Recording(decide)
    controller = Controller(name, reconciler, rate_limiter=fast_limiter())
    async with running(controller):
        controller.queue.add(A)
        await wait_until(lambda: reconciler.count[A] == 2)
        first, second = reconciler.times[A]
        await asyncio.sleep(0.1)
    assert reconciler.count[A] == 2
    assert 0.045 <= second - first < 0.5
    assert controller.queue.num_requeues(A) == 0, "a requeue_after is not a failure"
    assert reconciles(name, "requeue_after") == 1
    assert reconciles(name, "success") == 1


async def test_requeue_after_does_not_wait_for_an_earlier_backoff() -> None:
    def decide(_request: Request, attempt: int) -> Result | BaseException:
        return RuntimeError() if attempt == 1 else Result(requeue_after=0.05)

    controller = Controller(unique_name(), Recording(decide), rate_limiter=fast_limiter())
    await controller.reconcile_one(A)
    await controller.reconcile_one(A)
    assert controller.queue.num_requeues(A) == 0


async def test_requeue_true_is_rate_limited() -> None:
    name = unique_name()

    def decide(_request: Request, attempt: int) -> Result | BaseException:
        return Result(requeue=True) if attempt <= 3 else Result()

    reconciler = Recording(decide)
    controller = Controller(name, reconciler, rate_limiter=fast_limiter())
    await controller.reconcile_one(A)
    assert controller.queue.num_requeues(A) == 1
    async with running(controller):
        await wait_until(lambda: reconciler.count[A] == 4)
        await asyncio.sleep(0.05)
    assert reconciler.count[A] == 4
    assert reconciles(name, "requeue") == 3
    assert reconciles(name, "success") == 1
    assert reconciles(name, "error") == 0
    assert controller.queue.num_requeues(A) == 0


async def test_requeue_true_uses_the_rate_limiter_delay() -> None:
    limiter = ItemExponentialFailureRateLimiter(base_delay=0.2, max_delay=1.0)
    reconciler = Recording(lambda _request, _attempt: Result(requeue=True))
    controller = Controller(unique_name(), reconciler, rate_limiter=limiter)
    async with running(controller):
        controller.queue.add(A)
        await wait_until(lambda: reconciler.count[A] == 1)
        await asyncio.sleep(0.1)
        assert reconciler.count[A] == 1, "held back by the 0.2 s backoff"
        await wait_until(lambda: reconciler.count[A] == 2)
    first, second = reconciler.times[A]
    assert second - first >= 0.19


# --- concurrency --------------------------------------------------------------------------------


async def test_concurrent_workers_never_share_a_key() -> None:
    keys = [ObjectKey("ns", f"k{i}") for i in range(8)]
    active: Counter[Request] = Counter()
    peak_per_key: Counter[Request] = Counter()
    peak = 0
    done: Counter[Request] = Counter()

    async def reconcile(request: Request) -> Result:
        nonlocal peak
        active[request] += 1
        peak_per_key[request] = max(peak_per_key[request], active[request])
        peak = max(peak, sum(active.values()))
        await asyncio.sleep(0.01)
        active[request] -= 1
        done[request] += 1
        return Result()

    controller = fast_controller(reconcile, workers=4)
    async with running(controller):
        for _ in range(10):
            for key in keys:
                controller.queue.add(key)
            await asyncio.sleep(0.004)
        await wait_until(lambda: not len(controller.queue) and not controller.queue.processing)
    assert peak == 4, "four keys are reconciled at once"
    assert set(peak_per_key.values()) == {1}, "a key is never reconciled twice at once"
    assert set(done) == set(keys)
    assert sum(done.values()) < 10 * len(keys), "adds of a waiting key are deduplicated"


async def test_changes_during_a_reconcile_cause_exactly_one_more() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    calls = 0

    async def reconcile(_request: Request) -> Result:
        nonlocal calls
        calls += 1
        if calls == 1:
            started.set()
            await release.wait()
        return Result()

    controller = fast_controller(reconcile, workers=3)
    async with running(controller):
        controller.queue.add(A)
        await started.wait()
        for _ in range(5):
            controller.queue.add(A)
        await asyncio.sleep(0.02)
        assert calls == 1, "no second worker takes the key while it is reconciled"
        release.set()
        await wait_until(lambda: calls == 2)
        await asyncio.sleep(0.05)
    assert calls == 2


# --- shutdown -----------------------------------------------------------------------------------


async def test_shutdown_lets_the_in_flight_reconcile_finish() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[Request] = []

    async def reconcile(request: Request) -> Result:
        started.set()
        await release.wait()
        finished.append(request)
        return Result()

    controller = Controller(unique_name(), reconciler_from(reconcile), max_concurrent_reconciles=2)
    run = asyncio.create_task(controller.run())
    controller.queue.add(A)
    await started.wait()

    shutdown = asyncio.create_task(controller.shutdown())
    await asyncio.sleep(0.05)
    assert not shutdown.done(), "shutdown waits for the in-flight reconcile"
    assert not run.done()
    controller.queue.add(B)  # ignored once shutting down

    release.set()
    await asyncio.wait_for(shutdown, 1)
    await asyncio.wait_for(run, 1)
    assert finished == [A]


async def test_shutdown_of_an_idle_controller_returns_run() -> None:
    controller = Controller(unique_name(), Recording(), max_concurrent_reconciles=3)
    run = asyncio.create_task(controller.run())
    await asyncio.sleep(0.01)
    assert not run.done()
    await asyncio.wait_for(controller.shutdown(), 1)
    await asyncio.wait_for(run, 1)


async def test_shutdown_drops_pending_retries() -> None:
    reconciler = Recording(lambda _request, _attempt: RuntimeError())
    # The retry is due 0.5 s after the failure: long enough for the shutdown to come first
    # on a loaded machine, short enough to wait past.
    limiter = ItemExponentialFailureRateLimiter(base_delay=0.5, max_delay=1.0)
    controller = Controller(unique_name(), reconciler, rate_limiter=limiter)
    async with running(controller):
        controller.queue.add(A)
        await wait_until(lambda: reconciler.count[A] == 1)
    await asyncio.sleep(0.8)
    assert reconciler.count[A] == 1


# --- metrics and adapter ------------------------------------------------------------------------


async def test_max_concurrent_reconciles_and_active_workers_gauges() -> None:
    name = unique_name()
    started, release = asyncio.Event(), asyncio.Event()

    async def reconcile(_request: Request) -> Result:
        started.set()
        await release.wait()
        return Result()

    controller = Controller(name, reconciler_from(reconcile), max_concurrent_reconciles=3)
    assert sample("controller_runtime_max_concurrent_reconciles", name) == 3
    task = asyncio.create_task(controller.reconcile_one(A))
    await started.wait()
    assert sample("controller_runtime_active_workers", name) == 1
    release.set()
    await task
    assert sample("controller_runtime_active_workers", name) == 0


async def test_reconciler_from_adapts_an_async_function() -> None:
    seen: list[Request] = []

    async def reconcile(request: Request) -> Result:
        seen.append(request)
        return Result(requeue_after=5)

    adapted: Reconciler = reconciler_from(reconcile)
    assert await adapted.reconcile(A) == Result(requeue_after=5)
    assert seen == [A]

    name = unique_name()
    controller = Controller(name, adapted)
    await controller.reconcile_one(B)
    assert seen == [A, B]
    assert reconciles(name, "requeue_after") == 1


@pytest.mark.parametrize(
    ("result", "label"),
    [
        (Result(), "success"),
        (Result(requeue=True), "requeue"),
        (Result(requeue_after=1.0), "requeue_after"),
        (Result(requeue=True, requeue_after=1.0), "requeue_after"),
        (Result(requeue_after=0), "success"),
    ],
)
async def test_result_label_of_each_outcome(result: Result, label: str) -> None:
    name = unique_name()

    async def reconcile(_request: Request) -> Result:
        return result

    await Controller(name, reconciler_from(reconcile)).reconcile_one(A)
    assert reconciles(name, label) == 1
    others = {"success", "error", "requeue", "requeue_after"} - {label}
    assert all(reconciles(name, other) == 0 for other in others)


def test_result_defaults() -> None:
    assert Result() == Result(requeue=False, requeue_after=None)


async def test_shutdown_while_waiting_for_caches_returns_at_once() -> None:
    """A controller whose cache never syncs (its CRD is missing) must not hold up shutdown."""
    from jobcore import CONFIGMAPS  # noqa: PLC0415
    from jobcore import Informer  # noqa: PLC0415

    never_synced = Informer(None, CONFIGMAPS)  # type: ignore[arg-type]
    controller = Controller("never-synced", reconciler_from(_ok))
    controller.watch(never_synced)
    task = asyncio.create_task(controller.run())
    await asyncio.sleep(0.05)
    assert not task.done()
    await asyncio.wait_for(controller.shutdown(timeout=1), 2)
    await asyncio.wait_for(task, 1)


async def _ok(request: Request) -> Result:
    return Result()
