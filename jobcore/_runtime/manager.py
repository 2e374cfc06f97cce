"""The manager: runs caches, controllers, probes and leader election as one process lifetime."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterable
from typing import Any
from typing import Protocol

import structlog

from jobcore._runtime.client import Client
from jobcore._runtime.connlimits import ServerLimits
from jobcore._runtime.controller import Controller
from jobcore._runtime.errors import LeaderElectionLost
from jobcore._runtime.filing import IndexFunc
from jobcore._runtime.filing import Keep
from jobcore._runtime.informer import Informer
from jobcore._runtime.leaderelection import LeaderElectionConfig
from jobcore._runtime.leaderelection import LeaderElector
from jobcore._runtime.loopmonitor import LoopMonitor
from jobcore._runtime.resources import Resource
from jobcore._runtime.server import HealthChecks
from jobcore._runtime.server import ProbeServer

_log = structlog.get_logger("jobcore.manager")

Address = tuple[str, int]


class Runnable(Protocol):
    """Anything the manager runs: `run()` blocks until the task is cancelled."""

    async def run(self) -> None: ...


async def _cancel(tasks: Iterable[asyncio.Task[Any]]) -> None:
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


class Manager:
    """Starts shared informers first, then (as leader, when elected) controllers and runnables.

    Each controller reconciles only once its own informers have synced — so a kind whose CRD
    is missing holds back only itself, while `/readyz` fails until every cache has synced —
    and, with leader election, only while this process holds the lease: losing it cancels
    reconciles at once and `run` raises `LeaderElectionLost`, so the process exits and
    restarts as a standby. With leader election, `client` is the given one fenced by the
    lease (`LeaderElector.fence`): its writes raise `WriteFenced` unless this process leads
    within its renew deadline. `stop()` shuts down gracefully: in-flight reconciles may finish
    within the shutdown timeout, then the lease is released so a standby takes over without
    waiting for it to expire.
    """

    def __init__(
        self,
        client: Client,
        *,
        leader_election: LeaderElectionConfig | None = None,
        metrics_address: Address | None = ("127.0.0.1", 8080),
        health_address: Address | None = ("0.0.0.0", 8081),
        server_limits: ServerLimits | None = None,
        graceful_shutdown_timeout: float = 30.0,
    ) -> None:
        self.client = client
        self.healthz = HealthChecks()
        self.readyz = HealthChecks()
        self.healthz.add("ping", lambda: True)
        self.readyz.add("informers-synced", self._informers_synced)
        self.elected = asyncio.Event()
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self._elector = None
        if leader_election is not None:
            # Lease renewals never wait behind the controllers' requests for tokens.
            self._elector = LeaderElector(client.with_own_rate_limit(), leader_election)
            # Only a leader within its term writes: not a standby, nor one that froze.
            self.client = client.fenced(self._elector.fence)
        self._informers: dict[tuple[Any, ...], Informer] = {}
        self._informer_options: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._controllers: list[Controller] = []
        self._runnables: list[tuple[Runnable, bool]] = [(LoopMonitor(), False)]
        self._servers: list[ProbeServer] = []
        if metrics_address is not None:
            host, port = metrics_address
            self._servers.append(
                ProbeServer(host=host, port=port, metrics=True, limits=server_limits)
            )
        if health_address is not None:
            host, port = health_address
            self._servers.append(
                ProbeServer(
                    host=host,
                    port=port,
                    healthz=self.healthz,
                    readyz=self.readyz,
                    metrics=False,
                    limits=server_limits,
                )
            )
        self._stop = asyncio.Event()

    @property
    def servers(self) -> list[ProbeServer]:
        """The metrics server (when enabled) then the probe server (when enabled)."""
        return list(self._servers)

    def informer(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        keep: Keep | None = None,
        **options: Any,
    ) -> Informer:
        """The shared informer for this resource and scope, created on first use.

        It caches the objects that any of its callers' `keep` accepts: every object once one
        caller passes none. `options` configure the informer when it is created; asking again
        for the same scope may only add `indexers` (under new names), or repeat the options it
        was created with (the same `transform`, say), since the informer is already shared.
        Ask for every informer before `run`.
        """
        key = (resource, namespace, label_selector, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(
                self.client,
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                keep=keep,
                **options,
            )
            self._informers[key] = informer
            self._informer_options[key] = options
            return informer
        indexers: dict[str, IndexFunc] = options.pop("indexers", None) or {}
        first = self._informer_options[key]
        options = {k: v for k, v in options.items() if k not in first or first[k] is not v}
        if options:
            raise ValueError(
                f"the {resource.plural} informer for this scope already exists; "
                f"{', '.join(sorted(options))} can only be set by its first caller"
            )
        informer.keep_also(keep)
        for name, func in indexers.items():
            informer.add_indexer(name, func)
        return informer

    def add_controller(self, controller: Controller) -> None:
        self._controllers.append(controller)
        known = set(map(id, self._informers.values()))
        for informer in controller.informers:
            if id(informer) not in known:
                self._informers[("external", id(informer))] = informer

    def add(self, runnable: Runnable, *, needs_leader: bool = True) -> None:
        """Run `runnable` with the manager: only while leader unless `needs_leader` is False."""
        self._runnables.append((runnable, needs_leader))

    def stop(self) -> None:
        """Ask `run` to shut down gracefully; safe to call from a signal handler."""
        self._stop.set()

    def stop_on_signals(self) -> None:
        """Call `stop` when the process gets SIGTERM (Kubernetes stopping its pod) or SIGINT
        (Ctrl-C); from within the event loop that runs the manager."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)

    def _informers_synced(self) -> bool:
        return all(informer.has_synced() for informer in self._informers.values())

    async def run(self) -> None:
        """Run until `stop()`; raises LeaderElectionLost if the lease is lost."""
        for server in self._servers:
            await server.start()
        background = [asyncio.create_task(i.run()) for i in self._informers.values()]
        background += [asyncio.create_task(r.run()) for r, leader in self._runnables if not leader]
        leading: list[asyncio.Task[Any]] = []
        holding: asyncio.Task[None] | None = None
        stop_task = asyncio.create_task(self._stop.wait())
        try:
            if not await self._until_stopped(self._become_leader(), stop_task):
                return
            leading = [asyncio.create_task(c.run()) for c in self._controllers]
            leading += [asyncio.create_task(r.run()) for r, leader in self._runnables if leader]
            watched = [stop_task, *leading, *background]
            if self._elector is not None:
                holding = asyncio.create_task(self._elector.hold())
                watched.append(holding)
            done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            stopped = [t for t in done if t is not stop_task]
            for task in stopped:
                if not task.cancelled() and isinstance(task.exception(), LeaderElectionLost):
                    _log.error("leader election lost, stopping reconciles now")
                    self.elected.clear()  # first: what waits on it (events) stops at once
                    await _cancel(leading)
                    raise LeaderElectionLost(str(task.exception()))
            await self._shutdown_gracefully(leading)
            if stopped:
                error = next((t.exception() for t in stopped if not t.cancelled()), None)
                _log.error("a runnable stopped on its own, manager stopped", error=repr(error))
                raise RuntimeError("a runnable stopped on its own") from error
        finally:
            await _cancel([stop_task, *leading, *background])
            if holding is not None:
                # Cancelling hold() releases the lease when the config asks for it.
                await _cancel([holding])
            for server in self._servers:
                await server.stop()
            self.elected.clear()

    async def _become_leader(self) -> None:
        if self._elector is not None:
            await self._elector.acquire()
        _log.info("starting controllers", controllers=[c.name for c in self._controllers])
        self.elected.set()

    async def _until_stopped(self, work: Any, stop_task: asyncio.Task[Any]) -> bool:
        """Await `work` unless a stop comes first; True when the work finished."""
        task = asyncio.create_task(work)
        await asyncio.wait([task, stop_task], return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()
            return True
        await _cancel([task])
        return False

    async def _shutdown_gracefully(self, leading: list[asyncio.Task[Any]]) -> None:
        deadline = time.monotonic() + self.graceful_shutdown_timeout
        _log.info("shutting down", timeout=self.graceful_shutdown_timeout)
        await asyncio.gather(
            *(c.shutdown(timeout=max(0.0, deadline - time.monotonic())) for c in self._controllers)
        )
        remaining = max(0.0, deadline - time.monotonic())
        pending = [task for task in leading if not task.done()]
        if pending:
            _, still_running = await asyncio.wait(pending, timeout=remaining)
            if still_running:
                _log.warning("graceful shutdown timed out", unfinished=len(still_running))
