"""The fault proxy against a loopback stand-in for the API server: faults, counts, streaming."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from jobcore import CONFIGMAPS
from jobcore import ApiError
from jobcore import Client
from jobcore.testing import FaultProxy
from jobcore.testing import Faults

TOKEN = "admin-token"


@pytest.fixture
async def upstream() -> AsyncIterator[str]:
    """Answers with the bearer token it saw; a watch streams two events 0.3 s apart."""

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            return web.json_response({"authorization": request.headers.get("Authorization")})
        response = web.StreamResponse()
        await response.prepare(request)
        for rv in ("1", "2"):
            event = {"type": "ADDED", "object": {"metadata": {"name": rv, "resourceVersion": rv}}}
            await response.write(json.dumps(event).encode() + b"\n")
            await asyncio.sleep(0.3)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


def test_shares_are_checked() -> None:
    assert Faults.mixed(1.0).throttle == pytest.approx(1 / 6)
    assert Faults.mixed(0.2, cut_watch=0).cut_watch == 0
    with pytest.raises(ValueError, match="add up"):
        Faults(throttle=0.6, reset=0.6)
    with pytest.raises(ValueError, match="between 0 and 1"):
        Faults(cut_watch=2)


async def outcomes(upstream: str, seed: int) -> tuple[list[int | str], dict[str, int]]:
    faults = Faults(throttle=0.2, server_error=0.2, unavailable=0.2, reset=0.2)
    seen: list[int | str] = []
    async with (
        FaultProxy(upstream, TOKEN, faults=faults, seed=seed) as proxy,
        aiohttp.ClientSession() as session,
    ):
        for _ in range(30):
            try:
                # A POST: aiohttp resends a reset GET by itself, which would hide resets.
                async with session.post(f"{proxy.url}/api/v1/pods") as response:
                    seen.append(response.status)
                    if response.status == 200:
                        assert await response.json() == {"authorization": f"Bearer {TOKEN}"}
                    elif response.status != 500:
                        assert response.headers["Retry-After"] == "1"
            except aiohttp.ClientError:
                seen.append("reset")
        assert proxy.requests == 30
        return seen, dict(proxy.injected)


async def test_the_same_seed_fails_the_same_requests(upstream: str) -> None:
    first, injected = await outcomes(upstream, seed=3)
    assert await outcomes(upstream, seed=3) == (first, injected)
    assert set(first) == {200, 429, 500, 503, "reset"}
    assert sum(injected.values()) == len([o for o in first if o != 200])
    assert injected["reset"] == first.count("reset")
    assert (await outcomes(upstream, seed=4))[0] != first


async def watch_through(
    upstream: str, faults: Faults, kubeconfig: str
) -> tuple[list[str], list[float], ApiError | None, FaultProxy]:
    """The names a watch through the proxy saw, when, and the error that ended it, if any."""
    names: list[str] = []
    arrival: list[float] = []
    loop = asyncio.get_running_loop()
    async with FaultProxy(upstream, TOKEN, faults=faults, seed=0) as proxy:
        client = await Client.from_kubeconfig(proxy.kubeconfig(kubeconfig))
        try:
            async for _, obj in client.watch(CONFIGMAPS, "ns"):
                names.append(obj["metadata"]["name"])
                arrival.append(loop.time())
        except ApiError as failure:
            return names, arrival, failure, proxy
        finally:
            await client.close()
    return names, arrival, None, proxy


async def test_a_watch_is_streamed_not_buffered(upstream: str, tmp_path: Path) -> None:
    names, arrival, error, proxy = await watch_through(
        upstream, Faults(), str(tmp_path / "kubeconfig")
    )
    assert names == ["1", "2"] and error is None
    assert arrival[1] - arrival[0] >= 0.25  # the first event came before the second was sent
    assert proxy.watches == 1 and proxy.injected == {}


async def test_a_cut_watch_breaks_inside_an_event(upstream: str, tmp_path: Path) -> None:
    # With seed 0 the cut comes 0.17 s in: between the two events.
    faults = Faults(cut_watch=1.0, cut_after=0.4)
    names, _, error, proxy = await watch_through(upstream, faults, str(tmp_path / "kubeconfig"))
    assert names == ["1"]
    assert error is not None and error.status == 0 and error.retryable
    assert proxy.injected == {"cut_watch": 1}


async def test_a_conflict_is_answered_only_where_asked(upstream: str) -> None:
    faults = Faults(conflict=1.0, only=r"PATCH .*/status$")
    assert Faults.mixed(0.6).conflict == 0, "mixed faults never make up a conflict"
    async with (
        FaultProxy(upstream, TOKEN, faults=faults) as proxy,
        aiohttp.ClientSession() as session,
    ):
        async with session.patch(f"{proxy.url}/apis/g/v1/namespaces/n/js/j/status") as refused:
            assert refused.status == 409 and "Retry-After" not in refused.headers
            assert (await refused.json())["reason"] == "Conflict"
        async with session.patch(f"{proxy.url}/apis/g/v1/namespaces/n/js/j") as passed:
            assert passed.status == 200
    assert proxy.injected == {"conflict": 1}
