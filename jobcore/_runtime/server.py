"""Serve the liveness and readiness probes and the Prometheus metrics over HTTP.

The endpoints answer as controller-runtime's do, so probes and scrape configs carry over:
`/healthz` and `/readyz` say "ok" (200) when every check passes and list the checks with a
500 otherwise; `/healthz/<name>` and `/readyz/<name>` run one check; `/metrics` serves
`metrics.REGISTRY`. Like controller-runtime, a process usually runs two servers, one for
metrics and one for probes; each endpoint group is switched on by its argument. What a client
may hold of a server is bounded by `connlimits.ServerLimits`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
from collections.abc import Awaitable
from collections.abc import Callable

import structlog
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from prometheus_client.exposition import choose_encoder

from jobcore._runtime import connlimits
from jobcore._runtime import metrics
from jobcore._runtime.connlimits import ServerLimits

__all__ = ["Check", "HealthChecks", "ProbeServer"]

Check = Callable[[], bool | Awaitable[bool]]
"""A health check: True when healthy; raising counts as a failure."""

_log = structlog.get_logger("jobcore.server")
_TEXT_HEADERS = {"X-Content-Type-Options": "nosniff"}


def _not_a_bad_request(record: logging.LogRecord) -> bool:
    """aiohttp logs a traceback for each malformed request it answers 400: the client's fault,
    and, as many as an attacker likes, a flood in the logs."""
    return not (record.exc_info and isinstance(record.exc_info[1], HttpProcessingError))


_aiohttp_log = logging.getLogger("jobcore.server.aiohttp")
_aiohttp_log.addFilter(_not_a_bad_request)


class HealthChecks:
    """Named checks that together decide one probe (liveness or readiness)."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def add(self, name: str, check: Check) -> None:
        """Add a check; names must be unique, as they name the `/<probe>/<name>` endpoint."""
        if name in self._checks:
            raise ValueError(f"health check {name!r} already added")
        self._checks[name] = check

    def __contains__(self, name: str) -> bool:
        return name in self._checks

    async def run(self, names: list[str] | None = None) -> dict[str, bool]:
        """Run the checks (all, or `names`) concurrently; results sorted by name."""
        selected = sorted(self._checks if names is None else names)
        results = await asyncio.gather(*(self._run_one(name) for name in selected))
        return dict(zip(selected, results, strict=True))

    async def _run_one(self, name: str) -> bool:
        try:
            result = self._checks[name]()
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            _log.warning("health check raised", check=name, error=repr(exc))
            return False
        return bool(result)


class ProbeServer:
    """An HTTP server for `/healthz`, `/readyz` (when given their checks) and `/metrics`.

    `ProbeServer(host=..., port=8080)` serves metrics only;
    `ProbeServer(host=..., port=8081, healthz=..., readyz=..., metrics=False)` serves probes
    only. Port 0 binds a free port, readable from `port` once started. `limits` bound what
    clients may hold: connections, request heads' bytes and time, idle time (by default,
    `ServerLimits()`).
    """

    def __init__(
        self,
        *,
        host: str,
        port: int,
        healthz: HealthChecks | None = None,
        readyz: HealthChecks | None = None,
        metrics: bool = True,
        limits: ServerLimits | None = None,
    ) -> None:
        self._host = host
        self._requested_port = port
        self._limits = limits or ServerLimits()
        self._app = web.Application(middlewares=[connlimits.request_started])
        for probe, checks in (("healthz", healthz), ("readyz", readyz)):
            if checks is not None:
                self._app.router.add_get(f"/{probe}", _aggregate_handler(probe, checks))
                self._app.router.add_get(f"/{probe}/{{name}}", _single_handler(checks))
        if metrics:
            self._app.router.add_get("/metrics", _serve_metrics)
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        """The bound port; only known after `start()`."""
        if self._server is None:
            raise RuntimeError("ProbeServer is not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("ProbeServer is already started")
        # No access log: kubelet probes and scrapes every few seconds would drown the logs.
        runner = web.AppRunner(
            self._app,
            access_log=None,
            logger=_aiohttp_log,
            keepalive_timeout=self._limits.idle_timeout,
        )
        await runner.setup()
        assert runner.server is not None
        guard = connlimits.ConnectionGuard(runner.server, self._limits)
        try:
            # The kernel's largest accept queue: a burst of connections waits there for the
            # guard rather than having its SYNs dropped, which would delay a probe by the
            # client's 1 s retransmission, as long as the kubelet's default probe timeout.
            self._server = await asyncio.get_running_loop().create_server(
                guard, self._host, self._requested_port, backlog=socket.SOMAXCONN
            )
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        _log.info("serving", host=self._host, port=self.port)

    async def stop(self) -> None:
        if self._runner is not None and self._server is not None:
            runner, self._runner = self._runner, None
            self._server.close()
            await runner.cleanup()  # closes the open connections
            self._server = None


def _aggregate_handler(
    probe: str, checks: HealthChecks
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        results = await checks.run()
        failed = [name for name, ok in results.items() if not ok]
        if not failed and "verbose" not in request.query:
            return web.Response(text="ok", headers=_TEXT_HEADERS)
        # Like controller-runtime: always verbose on failure, and no failure detail, since
        # the endpoint is unauthenticated.
        lines = [
            f"[+]{name} ok" if ok else f"[-]{name} failed: reason withheld"
            for name, ok in results.items()
        ]
        if failed:
            _log.info("probe check failed", probe=probe, failed=failed)
        lines.append(f"{probe} check {'failed' if failed else 'passed'}")
        return web.Response(
            text="\n".join(lines) + "\n", status=500 if failed else 200, headers=_TEXT_HEADERS
        )

    return handle


def _single_handler(checks: HealthChecks) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in checks:
            return web.Response(text=f"no health check {name!r}\n", status=404)
        ok = (await checks.run([name]))[name]
        if ok:
            return web.Response(text="ok", headers=_TEXT_HEADERS)
        return web.Response(
            text=f"[-]{name} failed: reason withheld\n", status=500, headers=_TEXT_HEADERS
        )

    return handle


async def _serve_metrics(request: web.Request) -> web.Response:
    # Honours `Accept`, so a Prometheus that asks for OpenMetrics gets it.
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    response = web.Response(body=encoder(metrics.REGISTRY), headers={"Content-Type": content_type})
    response.enable_compression()
    return response
