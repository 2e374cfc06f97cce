"""The client's JSON: orjson for speed, the standard library for what orjson refuses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s_client

from jobcore import CONFIGMAPS
from jobcore import Client

DEPTH = 5_000
"""Deeper than orjson decodes (1,024) and than Python recurses by default (1,000)."""


@pytest.fixture
async def echo() -> AsyncIterator[tuple[Client, list[Any]]]:
    """A client of a server that answers each request with its body (or a deep object for
    a GET), and the bodies it received, as the standard library decodes them."""
    received: list[Any] = []

    async def handle(request: web.Request) -> web.Response:
        if request.method == "GET":
            deep = '{"a":' * DEPTH + "1" + "}" * DEPTH
            return web.Response(text=deep, content_type="application/json")
        body = await request.text()
        received.append(json.loads(body))
        return web.Response(text=body, content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    client = Client(k8s_client.ApiClient(k8s_client.Configuration(host=f"http://127.0.0.1:{port}")))
    try:
        yield client, received
    finally:
        await client.close()
        await runner.cleanup()


def depth(obj: Any) -> int:
    levels = 0
    while isinstance(obj, dict):
        obj, levels = obj["a"], levels + 1
    return levels


async def test_an_answer_nested_deeper_than_orjson_decodes_is_read_whole(
    echo: tuple[Client, list[Any]],
) -> None:
    client, _ = echo
    assert depth(await client.get(CONFIGMAPS, "x", "ns")) == DEPTH


async def test_bodies_orjson_refuses_are_sent_exactly(echo: tuple[Client, list[Any]]) -> None:
    client, received = echo
    nested: dict[str, Any] = {"a": 1}
    for _ in range(300):  # orjson encodes 254 levels
        nested = {"a": nested}
    meta = {"name": "x", "namespace": "ns"}
    await client.create(CONFIGMAPS, {"metadata": meta, "big": 2**70})
    await client.create(CONFIGMAPS, {"metadata": meta, "nested": nested})
    await client.create(CONFIGMAPS, {"metadata": meta, "data": {"k": "ünïcode"}})
    assert received[0]["big"] == 2**70
    assert depth(received[1]["nested"]) == 301
    assert received[2]["data"] == {"k": "ünïcode"}
