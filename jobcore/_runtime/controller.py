"""A controller: a work queue fed by watches, drained by workers that call one reconciler."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import Protocol

import structlog

from jobcore._runtime import metrics
from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import LeaderElectionLost
from jobcore._runtime.errors import TerminalError
from jobcore._runtime.handler import EnqueueRequests
from jobcore._runtime.handler import Mapper
from jobcore._runtime.handler import Request
from jobcore._runtime.handler import request_for_object
from jobcore._runtime.informer import Informer
from jobcore._runtime.logs import reconcile_context
from jobcore._runtime.predicate import Predicate
from jobcore._runtime.ratelimit import RateLimiter
from jobcore._runtime.ratelimit import default_controller_rate_limiter
from jobcore._runtime.resources import Object
from jobcore._runtime.retry import asked_wait
from jobcore._runtime.workqueue import QueueShutDown
from jobcore._runtime.workqueue import WorkQueue

_log = structlog.get_logger("jobcore.controller")


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next: nothing, a rate-limited retry, or a run after a delay."""

    requeue: bool = False
    requeue_after: float | None = None


class Reconciler(Protocol):
    """Brings the world in line with one object's spec.

    Return `Result()` when done, `Result(requeue_after=s)` to look again in `s` seconds
    (e.g. to enforce a deadline), `Result(requeue=True)` to retry with backoff. Raising an
    exception retries with per-key exponential backoff; raising `TerminalError` logs the
    failure and does not retry until the object changes again. `LeaderElectionLost` (a write
    the manager's fenced client refused) is retried too, but is no reconcile error. Reconciles
    of one key never overlap; changes arriving during a reconcile cause exactly one more.
    """

    async def reconcile(self, request: Request) -> Result: ...


class _FuncReconciler:
    def __init__(self, func: Callable[[Request], Awaitable[Result]]) -> None:
        self._func = func

    async def reconcile(self, request: Request) -> Result:
        return await self._func(request)


def reconciler_from(func: Callable[[Request], Awaitable[Result]]) -> Reconciler:
    """Adapt a plain async function to the `Reconciler` protocol."""
    return _FuncReconciler(func)


class Controller:
    """Runs `max_concurrent_reconciles` workers over one queue of requests.

    `watch` connects an informer to the queue; `run` blocks until cancelled or `shutdown`.
    A worker never dies from a reconcile's exception.
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        max_concurrent_reconciles: int = 1,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        self.name = name
        self.reconciler = reconciler
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self.queue: WorkQueue[Request] = WorkQueue(
            name=name, rate_limiter=rate_limiter or default_controller_rate_limiter()
        )
        self.informers: list[Informer] = []
        self._stopping = asyncio.Event()
        self._total = {
            result: metrics.reconcile_total.labels(name, result)
            for result in ("success", "error", "requeue", "requeue_after")
        }
        self._errors = metrics.reconcile_errors_total.labels(name)
        self._terminal_errors = metrics.terminal_reconcile_errors_total.labels(name)
        self._time = metrics.reconcile_time_seconds.labels(name)
        self._active = metrics.active_workers.labels(name)
        metrics.max_concurrent_reconciles.labels(name).set(max_concurrent_reconciles)
        self._log = _log.bind(controller=name)

    def watch(
        self,
        informer: Informer,
        *,
        mapper: Mapper = request_for_object,
        predicates: Sequence[Predicate] = (),
        delay: float = 0.0,
        urgent: Callable[[Object], bool] | None = None,
    ) -> None:
        """Enqueue `mapper(obj)` for every event of `informer` that passes all `predicates`,
        `delay` seconds later if given, unless a deletion or `urgent` (see `EnqueueRequests`)."""
        informer.add_handler(EnqueueRequests(self.queue, mapper, predicates, delay, urgent))
        if informer not in self.informers:
            self.informers.append(informer)

    async def run(self) -> None:
        """Start workers once the watched caches have synced; block until the queue shuts down.

        A shutdown while still waiting for the caches (say, a CRD that is not installed)
        returns at once.
        """
        synced: asyncio.Future[Any] = asyncio.ensure_future(
            asyncio.gather(*(informer.wait_for_sync() for informer in self.informers))
        )
        stopping: asyncio.Future[Any] = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait([synced, stopping], return_when=asyncio.FIRST_COMPLETED)
        for waiter in (synced, stopping):
            waiter.cancel()
        if self._stopping.is_set():
            return
        self._log.info("starting workers", workers=self.max_concurrent_reconciles)
        async with asyncio.TaskGroup() as group:
            for _ in range(self.max_concurrent_reconciles):
                group.create_task(self._worker())

    async def shutdown(self, timeout: float | None = None) -> None:
        """Stop handing out requests and wait (up to `timeout`) for in-flight reconciles."""
        self._stopping.set()
        await self.queue.shutdown(drain=True, timeout=timeout)

    async def _worker(self) -> None:
        while True:
            try:
                request = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self.reconcile_one(request)
            finally:
                self.queue.done(request)

    async def reconcile_one(self, request: Request) -> None:
        """Reconcile one request and requeue it as the outcome asks; never raises but on cancel."""
        with reconcile_context(controller=self.name, key=str(request)):
            self._active.inc()
            started = time.perf_counter()
            try:
                result = await self.reconciler.reconcile(request) or Result()
                if not isinstance(result, Result):
                    raise TypeError(f"reconcile returned {result!r}, not a Result")
            except LeaderElectionLost as exc:
                # A write fenced off: this process no longer leads and its manager is stopping
                # the workers; the new leader reconciles the request. No failure of its own.
                self.queue.add_rate_limited(request)
                self._log.info("reconcile stopped: not the leader", error=str(exc))
            except TerminalError as exc:
                self.queue.forget(request)
                self._errors.inc()
                self._terminal_errors.inc()
                self._total["error"].inc()
                self._log.error("reconcile failed terminally", error=str(exc))
            except Exception as exc:
                # Not sooner than the server asked, when it throttled a request (429).
                self.queue.add_rate_limited(request, at_least=asked_wait(exc))
                self._errors.inc()
                self._total["error"].inc()
                self._log.warning(
                    "reconcile failed, will retry",
                    error=str(exc) or type(exc).__name__,
                    retries=self.queue.num_requeues(request),
                    exc_info=not isinstance(exc, ApiError),
                )
            else:
                if result.requeue_after is not None and result.requeue_after > 0:
                    self.queue.forget(request)
                    self.queue.add_after(request, result.requeue_after)
                    self._total["requeue_after"].inc()
                elif result.requeue:
                    self.queue.add_rate_limited(request)
                    self._total["requeue"].inc()
                else:
                    self.queue.forget(request)
                    self._total["success"].inc()
                self._log.debug("reconciled", result=result)
            finally:
                self._time.observe(time.perf_counter() - started)
                self._active.dec()
