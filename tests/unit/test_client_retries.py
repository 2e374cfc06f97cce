"""The client's retry policy, against a loopback HTTP server that fails on purpose."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s_client

from jobcore import CONFIGMAPS, ApiError, Client, ConflictError, NotFoundError

Responder = Callable[[int], tuple[int, dict[str, object] | str]]


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


class FlakyServer:
    """Answers request n (from 1) with `respond(n)`, counting requests."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.requests = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        code, body = self.respond(self.requests)
        if isinstance(body, str):
            return web.Response(status=code, text=body)
        return web.Response(status=code, text=json.dumps(body), content_type="application/json")


Serve = Callable[[Responder], Awaitable[tuple[FlakyServer, Client]]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    runners: list[web.AppRunner] = []
    clients: list[Client] = []

    async def start(respond: Responder) -> tuple[FlakyServer, Client]:
        server = FlakyServer(respond)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", server.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        configuration = k8s_client.Configuration(host=f"http://127.0.0.1:{port}")
        client = Client(k8s_client.ApiClient(configuration), retry_max_wait=0.01)
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


async def test_unreachable_server_is_a_retryable_api_error() -> None:
    configuration = k8s_client.Configuration(host="http://127.0.0.1:9")
    async with Client(
        k8s_client.ApiClient(configuration), retry_attempts=2, retry_max_wait=0.01
    ) as client:
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
