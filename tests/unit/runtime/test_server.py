"""Probe and metrics endpoints, served on a free port and queried over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable

import aiohttp
import pytest

from jobcore._runtime import metrics
from jobcore._runtime.server import HealthChecks
from jobcore._runtime.server import ProbeServer


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def _get(http: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with http.get(url) as resp:
        return resp.status, await resp.text()


@pytest.fixture
async def probe_server() -> AsyncIterator[ProbeServer]:
    """Probes only: healthz `ping` passes; readyz has a passing, a failing and a raising check."""
    healthz, readyz = HealthChecks(), HealthChecks()
    healthz.add("ping", lambda: True)

    async def synced() -> bool:
        return True

    def raises() -> bool:
        raise RuntimeError("broken check")

    readyz.add("informers-synced", synced)
    readyz.add("webhook", lambda: False)
    readyz.add("raises", raises)
    server = ProbeServer(host="127.0.0.1", port=0, healthz=healthz, readyz=readyz, metrics=False)
    await server.start()
    yield server
    await server.stop()


Get = Callable[[str], Awaitable[tuple[int, str]]]
"""`get(path)`: the status and text with which the probe server answers a GET of `path`."""


@pytest.fixture
def get(http: aiohttp.ClientSession, probe_server: ProbeServer) -> Get:
    async def get(path: str) -> tuple[int, str]:
        return await _get(http, f"http://127.0.0.1:{probe_server.port}{path}")

    return get


async def test_healthz_ok(get: Get, probe_server: ProbeServer) -> None:
    assert probe_server.port > 0
    assert await get("/healthz") == (200, "ok")
    assert await get("/healthz?verbose") == (200, "[+]ping ok\nhealthz check passed\n")
    assert await get("/healthz/ping") == (200, "ok")


async def test_failing_readyz_check_is_named(get: Get) -> None:
    status, text = await get("/readyz")
    assert status == 500
    assert text.splitlines() == [
        "[+]informers-synced ok",
        "[-]raises failed: reason withheld",
        "[-]webhook failed: reason withheld",
        "readyz check failed",
    ]
    assert await get("/readyz/informers-synced") == (200, "ok")
    status, text = await get("/readyz/webhook")
    assert (status, text.strip()) == (500, "[-]webhook failed: reason withheld")
    status, _ = await get("/readyz/unknown")
    assert status == 404


async def test_probe_server_serves_no_metrics(get: Get) -> None:
    status, _ = await get("/metrics")
    assert status == 404


async def test_metrics_only_server(http: aiohttp.ClientSession) -> None:
    metrics.workqueue_depth.labels("test-server").set(3)
    server = ProbeServer(host="127.0.0.1", port=0)
    await server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        async with http.get(f"{base}/metrics") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain; version=")
            text = await resp.text()
        assert 'workqueue_depth{name="test-server"} 3.0' in text
        async with http.get(
            f"{base}/metrics", headers={"Accept": "application/openmetrics-text"}
        ) as resp:
            assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
            assert (await resp.text()).endswith("# EOF\n")
        status, _ = await _get(http, f"{base}/healthz")
        assert status == 404
    finally:
        await server.stop()
        metrics.workqueue_depth.remove("test-server")


async def test_port_before_start_and_stop_twice() -> None:
    server = ProbeServer(host="127.0.0.1", port=0)
    with pytest.raises(RuntimeError):
        _ = server.port
    await server.start()
    await server.stop()
    await server.stop()


def test_duplicate_check_names_are_rejected() -> None:
    checks = HealthChecks()
    checks.add("ping", lambda: True)
    with pytest.raises(ValueError, match="ping"):
        checks.add("ping", lambda: True)
