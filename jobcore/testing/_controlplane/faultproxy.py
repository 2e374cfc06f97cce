"""A loopback reverse proxy to the API server that fails a share of requests on purpose."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import random
import re
import socket
import struct
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from jobcore.testing._controlplane.envtest import _write_kubeconfig
from jobcore.testing._shared.started import Started

# Headers of one hop, not of the message (RFC 9110 7.6.1), and those aiohttp sets itself.
_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_ANSWERED = {
    "throttle": (429, "TooManyRequests", "the fault proxy throttled this request"),
    "server_error": (500, "InternalError", "the fault proxy failed this request"),
    "unavailable": (503, "ServiceUnavailable", "the fault proxy is unavailable"),
    "conflict": (409, "Conflict", "the fault proxy says the object was modified"),
}
_MAX_BODY = 16 * 2**20
"""Request bodies up to this size are forwarded (the API server takes up to 3 MiB)."""
_MIXED_FAULTS = ("throttle", "server_error", "unavailable", "reset", "lost_answer", "slow")
"""The request faults `Faults.mixed` spreads a share over: any request may meet them."""
_REQUEST_FAULTS = (*_MIXED_FAULTS, "conflict")
_TORN_EVENT = b'{"type":"MODIFIED","object":{"kind":'
"""What a watch cut inside an event leaves of the event."""


@dataclass(frozen=True, slots=True)
class Faults:
    """What share (0 to 1) of requests meets each fault; the request faults add up to <= 1.

    Each request draws one of the request faults or none; a watch that is forwarded then
    draws whether it is cut. Answers made up by the proxy look like the API server's own: a
    `Status` object, `Retry-After` on 429 and 503.
    """

    throttle: float = 0.0
    """Answered 429 TooManyRequests with `Retry-After`; not forwarded."""
    server_error: float = 0.0
    """Answered 500 InternalError; not forwarded."""
    unavailable: float = 0.0
    """Answered 503 ServiceUnavailable with `Retry-After`; not forwarded."""
    reset: float = 0.0
    """The connection is reset before the request is forwarded: nothing happened."""
    lost_answer: float = 0.0
    """Forwarded, then the connection is reset instead of answering: it did happen."""
    slow: float = 0.0
    """Forwarded after `delay` seconds."""
    conflict: float = 0.0
    """Answered 409 Conflict, as to a write on top of an outdated resourceVersion; not
    forwarded. Meant for writes, with `only`."""
    cut_watch: float = 0.0
    """Share of forwarded watches cut, inside an event, after up to `cut_after` seconds."""
    retry_after: int = 1
    """The `Retry-After` seconds of a 429 or 503."""
    delay: float = 0.5
    """How long a slow request waits before it is forwarded."""
    cut_after: float = 5.0
    """The longest a cut watch runs; each cut one runs a random share of it."""
    only: str | None = None
    """A regular expression: only requests whose `METHOD path` it matches meet faults, e.g.
    `DELETE .*/pods/` (None: every request)."""

    @classmethod
    def mixed(cls, share: float, **options: Any) -> Faults:
        """`share` of requests spread evenly over the six request faults that any request may
        meet (not `conflict`); as many watches cut.

        `options` set other fields or override a share, e.g. `delay=0.2, cut_watch=0`.
        """
        shares: dict[str, Any] = dict.fromkeys(_MIXED_FAULTS, share / len(_MIXED_FAULTS))
        return cls(**{**shares, "cut_watch": share, **options})

    def __post_init__(self) -> None:
        shares = [getattr(self, name) for name in (*_REQUEST_FAULTS, "cut_watch")]
        if any(not 0 <= value <= 1 for value in shares):
            raise ValueError(f"fault shares are between 0 and 1: {self}")
        if sum(getattr(self, name) for name in _REQUEST_FAULTS) > 1 + 1e-9:
            raise ValueError(f"the request faults' shares add up to more than 1: {self}")


class FaultProxy(Started):
    """An HTTP proxy on 127.0.0.1 to the API server at `upstream_url`, injecting `faults`.

    Plain HTTP on loopback; point a client at it with `kubeconfig(path)`. Requests go on
    upstream with the bearer `token` (whatever the client sent), without TLS verification,
    as the test kubeconfigs do. Answers are streamed, not buffered, so watches run as they
    would against the server itself. The n-th request takes the n-th draw of
    `random.Random(seed)`: the same seed and the same order of requests fail the same
    requests. `requests` counts the requests received, `methods` them by method, `watches`
    the watches among them, `injected` the faults by name (the fields of `Faults`); `writes`
    lists the method and path of every request but a GET, in order. `faults`
    may be replaced at any time, e.g. by `Faults()` to stop failing.

        faults = Faults.mixed(0.2)
        async with FaultProxy(plane.url, plane.token, faults=faults, seed=1) as proxy:
            client = await Client.from_kubeconfig(proxy.kubeconfig(path))
    """

    def __init__(
        self, upstream_url: str, token: str, *, faults: Faults | None = None, seed: int = 0
    ) -> None:
        self.upstream_url = upstream_url.rstrip("/")
        self.faults = faults or Faults()
        self.requests = 0
        self.methods: collections.Counter[str] = collections.Counter()
        self.writes: list[tuple[str, str]] = []
        self.watches = 0
        self.injected: collections.Counter[str] = collections.Counter()
        self._token = token
        self._random = random.Random(seed)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        if self._runner is None:
            raise RuntimeError("the fault proxy is not started")
        return f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    def kubeconfig(self, path: str) -> str:
        """Write a kubeconfig for the proxy to `path`; return `path`."""
        return _write_kubeconfig(path, self.url, self._token)

    async def start(self) -> None:
        """Listen on a free loopback port; `url` tells which."""
        # No connection limit: every watch holds one upstream connection for its lifetime.
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ssl=False),
            auto_decompress=False,
            trust_env=False,
        )
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # Cancel a handler when its client goes away, so the upstream request ends too.
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()

    async def stop(self) -> None:
        """Close every connection, watches included; safe to call twice."""
        try:
            if self._runner is not None:
                await self._runner.cleanup()
        finally:
            self._runner = None
            if self._session is not None:
                await self._session.close()
                self._session = None

    def _draw(self, watch: bool) -> tuple[str | None, float | None]:
        """This request's fault, and for a watch when to cut it (None: never)."""
        faults = self.faults
        point, fault = self._random.random(), None
        for name in _REQUEST_FAULTS:
            point -= getattr(faults, name)
            if point < 0:
                fault = name
                break
        cut = self._random.random() < faults.cut_watch
        cut_at = self._random.uniform(0, faults.cut_after)
        return fault, cut_at if watch and cut else None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        self.methods[request.method] += 1
        if request.method != "GET":
            self.writes.append((request.method, request.path))
        watch = request.query.get("watch") in ("true", "1")
        self.watches += watch
        fault, cut_at = self._draw(watch)
        only = self.faults.only
        if only is not None and not re.match(only, f"{request.method} {request.path}"):
            fault, cut_at = None, None
        if fault is not None:
            self.injected[fault] += 1
        if fault in _ANSWERED:
            code, reason, message = _ANSWERED[fault]
            headers = {"Retry-After": str(self.faults.retry_after)} if code in (429, 503) else {}
            return _status(code, reason, message, headers)
        if fault == "reset":
            _reset(request)
            return web.Response()
        if fault == "slow":
            await asyncio.sleep(self.faults.delay)
        return await self._forward(request, lose_answer=fault == "lost_answer", cut_at=cut_at)

    async def _forward(
        self, request: web.Request, *, lose_answer: bool, cut_at: float | None
    ) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        headers["Authorization"] = f"Bearer {self._token}"
        body = await request.read()
        try:
            upstream = await self._session.request(
                request.method,
                self.upstream_url + request.rel_url.raw_path_qs,
                headers=headers,
                data=body or None,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            )
        except (aiohttp.ClientError, OSError) as exc:
            return _status(502, "BadGateway", f"the fault proxy's upstream failed: {exc!r}", {})
        async with upstream:
            if lose_answer:  # the upstream has answered: whatever was asked has happened
                _reset(request)
                return web.Response()
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in _HOP_HEADERS:
                    response.headers.add(name, value)
            await response.prepare(request)
            deadline = None if cut_at is None else asyncio.get_running_loop().time() + cut_at
            try:
                async with asyncio.timeout_at(deadline):
                    async for chunk in upstream.content.iter_any():
                        await response.write(chunk)
            except TimeoutError:
                self.injected["cut_watch"] += 1
                with contextlib.suppress(ConnectionError):
                    await response.write(_TORN_EVENT)
                _reset(request)
                return response
            except (aiohttp.ClientError, OSError):
                _reset(request)  # the upstream broke mid-answer: so does the answer
                return response
            await response.write_eof()
            return response


def _status(code: int, reason: str, message: str, headers: dict[str, str]) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.Response(
        status=code, text=json.dumps(body), content_type="application/json", headers=headers
    )


def _reset(request: web.Request) -> None:
    """Drop the client's connection with a TCP reset (SO_LINGER 0), not an orderly close."""
    transport = request.transport
    if transport is None or transport.is_closing():
        return
    sock: socket.socket | None = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
