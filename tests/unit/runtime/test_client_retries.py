"""The client's retry policy, against a loopback HTTP server that fails on purpose."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from collections.abc import AsyncIterator
from collections.abc import Callable
from email.utils import formatdate
from typing import Any
from typing import Protocol

import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s_client

from jobcore import CONFIGMAPS
from jobcore import AlreadyExistsError
from jobcore import ApiError
from jobcore import Client
from jobcore import ConflictError
from jobcore import EventRecorder
from jobcore import NotFoundError
from jobcore import WriteFenced
from jobcore._runtime.retry import MAX_ASKED_WAIT
from jobcore._runtime.retry import asked_wait
from jobcore._runtime.retry import parse_retry_after
from jobcore.testing import api_requests

Reply = tuple[int, dict[str, object] | str] | tuple[int, dict[str, object] | str, dict[str, str]]
"""`(code, body)` or `(code, body, headers)`; RESET resets the connection instead, HANG
answers 200 after 5 s."""
Responder = Callable[[int], Reply]
RESET, HANG = 0, -1


def status(code: int, reason: str) -> dict[str, object]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": f"{reason} on purpose",
    }


OK: dict[str, object] = {
    "kind": "ConfigMap",
    "apiVersion": "v1",
    "metadata": {"name": "x", "namespace": "ns"},
}


def reset(request: web.Request) -> None:
    """Drop the connection with a TCP reset, as a crashed proxy or server does."""
    transport = request.transport
    assert transport is not None
    sock = transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


class FlakyServer:
    """Answers request n (from 1) with `respond(n)`, counting requests and their times."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.requests = 0
        self.times: list[float] = []
        self.sent: list[tuple[str, str]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        self.times.append(time.monotonic())
        self.sent.append((request.method, request.path))
        code, body, *more = self.respond(self.requests)
        headers = more[0] if more else {}
        if code == RESET:
            reset(request)
            return web.Response()
        if code == HANG:
            await asyncio.sleep(5)
            code = 200
        if isinstance(body, str):
            return web.Response(status=code, text=body, headers=headers)
        return web.Response(
            status=code, text=json.dumps(body), content_type="application/json", headers=headers
        )


class Serve(Protocol):
    async def __call__(self, respond: Responder, **options: Any) -> tuple[FlakyServer, Client]: ...


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    runners: list[web.AppRunner] = []
    clients: list[Client] = []

    async def start(respond: Responder, **options: Any) -> tuple[FlakyServer, Client]:
        server = FlakyServer(respond)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", server.handle)
        runner = web.AppRunner(app, handler_cancellation=True)  # ends HANGs the client left
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        configuration = k8s_client.Configuration(host=f"http://127.0.0.1:{port}")
        options.setdefault("retry_max_wait", 0.01)
        client = Client(k8s_client.ApiClient(configuration), **options)
        clients.append(client)
        return server, client

    yield start
    for client in clients:
        await client.close()
    for runner in runners:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("code", "reason"),
    [(503, "ServiceUnavailable"), (429, "TooManyRequests"), (500, "InternalError")],
)
async def test_transient_failures_are_retried_until_success(
    serve: Serve, code: int, reason: str
) -> None:
    server, client = await serve(lambda n: (code, status(code, reason)) if n < 3 else (200, OK))
    assert await client.get(CONFIGMAPS, "x", "ns") == OK
    assert server.requests == 3


async def test_retries_are_bounded(serve: Serve) -> None:
    server, client = await serve(lambda n: (503, status(503, "ServiceUnavailable")))
    with pytest.raises(ApiError) as failure:
        await client.get(CONFIGMAPS, "x", "ns")
    assert failure.value.status == 503
    assert server.requests == 6


@pytest.mark.parametrize(
    ("code", "reason", "error"),
    [(404, "NotFound", NotFoundError), (409, "Conflict", ConflictError)],
)
async def test_permanent_failures_are_not_retried(
    serve: Serve, code: int, reason: str, error: type[ApiError]
) -> None:
    server, client = await serve(lambda n: (code, status(code, reason)))
    with pytest.raises(error):
        await client.get(CONFIGMAPS, "x", "ns")
    assert server.requests == 1


def unreachable_client(*, retry_attempts: int) -> Client:
    """A client of a port nothing listens on (9, discard), retrying at once."""
    configuration = k8s_client.Configuration(host="http://127.0.0.1:9")
    return Client(
        k8s_client.ApiClient(configuration), retry_attempts=retry_attempts, retry_max_wait=0.01
    )


async def test_unreachable_server_is_a_retryable_api_error() -> None:
    async with unreachable_client(retry_attempts=2) as client:
        with pytest.raises(ApiError) as failure:
            await client.get(CONFIGMAPS, "x", "ns")
    assert failure.value.status == 0
    assert failure.value.retryable


async def test_a_plain_text_error_page_still_maps_to_its_error(serve: Serve) -> None:
    """A missing resource answers `404 page not found` as text, not as a Status object."""
    server, client = await serve(lambda n: (404, "404 page not found"))
    with pytest.raises(NotFoundError) as missing:
        await client.get(CONFIGMAPS, "x", "ns")
    assert "404 page not found" in missing.value.message
    assert server.requests == 1


def throttled(code: int = 429, after: str = "1") -> Reply:
    reason = "TooManyRequests" if code == 429 else "ServiceUnavailable"
    return code, status(code, reason), {"Retry-After": after}


def gaps(server: FlakyServer) -> list[float]:
    return [later - earlier for earlier, later in zip(server.times, server.times[1:], strict=False)]


@pytest.mark.parametrize("code", [429, 503])
async def test_retry_after_is_honoured_over_a_shorter_backoff(serve: Serve, code: int) -> None:
    server, client = await serve(lambda n: throttled(code) if n == 1 else (200, OK))
    assert await client.get(CONFIGMAPS, "x", "ns") == OK
    assert server.requests == 2
    assert 0.95 <= gaps(server)[0] < 2.0  # backoff alone would be under 0.01 s


async def test_retry_after_in_the_status_details_counts_too(serve: Serve) -> None:
    body = status(429, "TooManyRequests")
    body["details"] = {"retryAfterSeconds": 1}
    server, client = await serve(lambda n: (429, body) if n == 1 else (200, OK))
    assert await client.get(CONFIGMAPS, "x", "ns") == OK
    assert gaps(server)[0] >= 0.95


@pytest.mark.parametrize("code", [429, 503])
async def test_a_retry_after_beyond_the_cap_is_raised_at_once_not_sent_sooner(
    serve: Serve, code: int
) -> None:
    server, client = await serve(lambda n: throttled(code, after="3600"), retry_after_max=0.2)
    started = time.monotonic()
    with pytest.raises(ApiError) as failure:
        await client.get(CONFIGMAPS, "x", "ns")
    assert failure.value.status == code
    assert failure.value.retry_after == 3600.0  # for the caller to come back then
    assert server.requests == 1
    assert time.monotonic() - started < 0.5


async def test_throttling_still_ends_after_the_last_attempt(serve: Serve) -> None:
    server, client = await serve(lambda n: throttled(after="0.05"), retry_attempts=3)
    with pytest.raises(ApiError) as failure:
        await client.get(CONFIGMAPS, "x", "ns")
    assert failure.value.status == 429
    assert failure.value.retry_after == 0.05
    assert server.requests == 3


def test_retry_after_accepts_seconds_and_http_dates_and_ignores_nonsense() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(" 1.5 ") == 1.5
    in_a_minute = parse_retry_after(formatdate(time.time() + 60, usegmt=True))
    assert in_a_minute is not None and 55 < in_a_minute <= 60
    for nonsense in (None, "", "0", "-3", "soon", "nan", "inf", formatdate(0, usegmt=True)):
        assert parse_retry_after(nonsense) is None, nonsense


def named_configmap() -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}


def generated_configmap() -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-"}}


async def test_a_reset_is_retried_for_a_read(serve: Serve) -> None:
    server, client = await serve(lambda n: (RESET, "") if n < 4 else (200, OK))
    assert await client.get(CONFIGMAPS, "x", "ns") == OK
    # aiohttp resends a GET once on a reset by itself: each of our attempts may be two sends.
    assert server.requests >= 4


@pytest.mark.parametrize("fault", [RESET, 500, 503])
async def test_a_lost_create_of_a_named_object_is_sent_again(serve: Serve, fault: int) -> None:
    """The repeat may meet the object its first send made: AlreadyExists, i.e. "it exists"."""
    answers: dict[int, Reply] = {
        1: (fault, status(fault, "InternalError")),
        2: (409, status(409, "AlreadyExists")),
    }
    server, client = await serve(lambda n: answers.get(n, (201, OK)))
    with pytest.raises(AlreadyExistsError):
        await client.create(CONFIGMAPS, named_configmap(), "ns")
    assert server.requests == 2


@pytest.mark.parametrize("fault", [RESET, 500, 503])
async def test_a_create_with_generate_name_is_not_sent_again_when_it_may_have_happened(
    serve: Serve, fault: int
) -> None:
    server, client = await serve(lambda n: (fault, status(fault, "InternalError")))
    with pytest.raises(ApiError) as failure:
        await client.create(CONFIGMAPS, generated_configmap(), "ns")
    assert failure.value.status == (0 if fault == RESET else fault)
    assert server.requests == 1


async def test_a_throttled_create_with_generate_name_is_sent_again(serve: Serve) -> None:
    """A 429 is refused before anything happens: safe to repeat whatever the request."""
    server, client = await serve(
        lambda n: throttled(after="0") if n < 3 else (201, OK), retry_attempts=3
    )
    assert await client.create(CONFIGMAPS, generated_configmap(), "ns") == OK
    assert server.requests == 3


async def test_an_unreachable_server_is_tried_again_even_for_a_generated_create() -> None:
    async with unreachable_client(retry_attempts=3) as client:
        before = api_requests("POST")
        with pytest.raises(ApiError) as failure:
            await client.create(CONFIGMAPS, generated_configmap(), "ns")
    assert failure.value.status == 0
    assert api_requests("POST") - before == 3


@pytest.mark.parametrize(
    ("ops", "sends"),
    [
        ([{"op": "replace", "path": "/data", "value": {}}], 3),
        ([{"op": "add", "path": "/metadata/finalizers/-", "value": "x"}], 1),
    ],
)
async def test_a_json_patch_is_repeated_only_when_it_sets_values(
    serve: Serve, ops: list[dict[str, object]], sends: int
) -> None:
    server, client = await serve(lambda n: (500, status(500, "InternalError")), retry_attempts=3)
    with pytest.raises(ApiError):
        await client.patch(CONFIGMAPS, "x", ops, "ns", patch_type="json")
    assert server.requests == sends


async def test_a_merge_patch_is_repeated(serve: Serve) -> None:
    server, client = await serve(lambda n: (RESET, "") if n == 1 else (200, OK))
    assert await client.patch(CONFIGMAPS, "x", {"data": {"a": "1"}}, "ns") == OK
    assert server.requests == 2


@pytest.mark.parametrize("ending", ["reset", "clean end"])
async def test_a_watch_cut_inside_an_event_is_a_retryable_error_after_the_whole_ones(
    ending: str,
) -> None:
    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        added = {"type": "ADDED", "object": OK | {"metadata": {"resourceVersion": "5"}}}
        await response.write(json.dumps(added).encode() + b"\n")
        await response.write(b'{"type":"MODIFIED","object":{"kind":"Conf')
        if ending == "reset":
            reset(request)
        return response

    app = web.Application()
    app.router.add_get("/{tail:.*}", stream)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    configuration = k8s_client.Configuration(host=f"http://127.0.0.1:{runner.addresses[0][1]}")
    seen: list[str] = []
    try:
        async with Client(k8s_client.ApiClient(configuration)) as client:
            with pytest.raises(ApiError) as failure:
                async for kind, _ in client.watch(CONFIGMAPS, "ns"):
                    seen.append(kind)
    finally:
        await runner.cleanup()
    assert seen == ["ADDED"]
    assert failure.value.status == 0 and failure.value.retryable


async def test_an_event_whose_create_answer_was_lost_is_counted_on_not_made_again(
    serve: Serve,
) -> None:
    """The repeated create meets the recorder's own Event: a repeat then patches that one."""
    answers: dict[int, Reply] = {1: (RESET, ""), 2: (409, status(409, "AlreadyExists"))}
    server, client = await serve(lambda n: answers.get(n, (200, {})))
    recorder = EventRecorder(client, component="test")
    job = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}}
    for _ in range(2):
        await recorder.record(job, type="Normal", reason="Seen", message="twice")
    assert [method for method, _ in server.sent] == ["POST", "POST", "PATCH"]
    assert server.sent[2][1].startswith("/api/v1/namespaces/ns/events/x.")


@pytest.mark.parametrize(("body", "sends"), [(named_configmap(), 2), (generated_configmap(), 1)])
async def test_a_timed_out_create_is_sent_again_only_when_that_is_safe(
    serve: Serve, body: dict[str, object], sends: int
) -> None:
    server, client = await serve(lambda n: (HANG, OK) if n == 1 else (201, OK), request_timeout=0.2)
    if sends == 1:
        with pytest.raises(ApiError) as failure:
            await client.create(CONFIGMAPS, body, "ns")
        assert failure.value.status == 0
    else:
        assert await client.create(CONFIGMAPS, body, "ns") == OK
    assert server.requests == sends


async def test_a_timed_out_read_is_retried(serve: Serve) -> None:
    server, client = await serve(lambda n: (HANG, OK) if n < 3 else (200, OK), request_timeout=0.2)
    assert await client.get(CONFIGMAPS, "x", "ns") == OK
    assert server.requests == 3


async def test_a_rate_limited_client_sends_its_burst_at_once_then_qps_a_second(
    serve: Serve,
) -> None:
    server, client = await serve(lambda n: (200, OK), qps=20.0, burst=3)
    started = time.monotonic()
    await asyncio.gather(*(client.get(CONFIGMAPS, f"x{i}", "ns") for i in range(13)))
    burst = [t - started for t in server.times[:3]]
    # Sent without waiting for tokens: before the first token-paced one, with its allowance.
    assert all(t < 0.1 for t in burst) and max(server.times[:3]) < server.times[3], burst
    # The n-th request after the burst waits n/20 s for its token.
    late = [t - started - (n + 1) / 20 for n, t in enumerate(server.times[3:])]
    assert all(-0.005 < lateness < 0.1 for lateness in late), late  # a loop tick early at most


async def test_retries_and_watches_wait_for_their_tokens_too(serve: Serve) -> None:
    answers = {1: throttled(after="0.01"), 2: (200, OK), 3: (200, "")}  # "": a watch's end
    server, client = await serve(answers.__getitem__, qps=10.0, burst=1)
    await client.get(CONFIGMAPS, "x", "ns")  # sent twice: throttled, then retried
    async for _ in client.watch(CONFIGMAPS, "ns"):
        pass
    assert [method for method, _ in server.sent] == ["GET", "GET", "GET"]
    # 0.1 s apart as sent; the server's clock sees them through a loaded machine's delays.
    assert all(gap >= 0.05 for gap in gaps(server)), gaps(server)


async def test_a_client_with_its_own_rate_limit_does_not_wait_behind_the_other(
    serve: Serve,
) -> None:
    server, client = await serve(lambda n: (200, OK), qps=1.0, burst=1)
    await client.get(CONFIGMAPS, "x", "ns")  # the one token this second
    started = time.monotonic()
    await client.with_own_rate_limit().get(CONFIGMAPS, "lease", "ns")
    assert time.monotonic() - started < 0.5
    assert server.requests == 2


def test_asked_wait_finds_retry_after_in_the_cause_and_bounds_it() -> None:
    throttle = ApiError(429, "TooManyRequests", retry_after=3.0)
    try:
        raise RuntimeError("reconcile failed") from throttle
    except RuntimeError as exc:
        assert asked_wait(exc) == 3.0
    assert asked_wait(ApiError(429, retry_after=10**9)) == MAX_ASKED_WAIT
    assert asked_wait(ApiError(500)) == 0.0


async def test_a_fenced_client_sends_no_write_its_fence_refuses(serve: Serve) -> None:
    server, client = await serve(lambda n: (200, OK), qps=20.0, burst=1)
    closed = False

    def fence() -> None:
        if closed:
            raise WriteFenced("lease test/lease: not renewed within 3s")

    fenced = client.fenced(fence)
    await fenced.patch(CONFIGMAPS, "x", {"data": {}}, "ns")
    # A write that waits for its token while the fence closes is refused when its turn comes.
    waiting = asyncio.create_task(fenced.delete(CONFIGMAPS, "x", "ns"))
    await asyncio.sleep(0)
    closed = True
    with pytest.raises(WriteFenced):
        await waiting
    with pytest.raises(WriteFenced):
        await fenced.create(CONFIGMAPS, {"metadata": {"name": "y"}}, "ns")
    await fenced.get(CONFIGMAPS, "x", "ns")  # reads pass
    await client.delete(CONFIGMAPS, "x", "ns")  # the client it came from is not fenced
    assert [method for method, _ in server.sent] == ["PATCH", "GET", "DELETE"]
