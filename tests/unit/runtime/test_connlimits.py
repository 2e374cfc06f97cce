"""What a client may hold of a probe server, tried over loopback sockets: a head's bytes and
time, idle time, and a place among the open connections."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

import pytest

from controllers.cli import main
from jobcore import ServerLimits
from jobcore._runtime.server import HealthChecks
from jobcore._runtime.server import ProbeServer

HEAD = b"GET /healthz HTTP/1.1\r\nHost: probe\r\n"
"""A request head without its closing blank line."""


@contextlib.asynccontextmanager
async def serving(limits: ServerLimits) -> AsyncIterator[int]:
    """A probe server with `limits` on a free loopback port; its port."""
    healthz = HealthChecks()
    healthz.add("ping", lambda: True)
    server = ProbeServer(host="127.0.0.1", port=0, healthz=healthz, metrics=False, limits=limits)
    await server.start()
    try:
        yield server.port
    finally:
        await server.stop()


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def closed_after(reader: asyncio.StreamReader) -> tuple[float, bytes]:
    """Seconds until the server closes the connection, and what it sent before."""
    start = time.monotonic()
    try:
        data = await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:
        data = b""
    return time.monotonic() - start, data


async def healthz(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """The status line of a GET /healthz on a kept-alive connection."""
    writer.write(HEAD + b"\r\n")
    status = await asyncio.wait_for(reader.readline(), 5)
    await asyncio.wait_for(reader.readuntil(b"\r\n\r\nok"), 5)
    return status


def test_defaults_are_controller_runtimes_timeouts(capsys: pytest.CaptureFixture[str]) -> None:
    limits = ServerLimits()
    assert (limits.header_timeout, limits.idle_timeout) == (32.0, 90.0)
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    usage = " ".join(capsys.readouterr().out.split())
    assert "in this time (default: 32)" in usage
    assert "idle this long (default: 90)" in usage
    with pytest.raises(ValueError, match="positive"):
        ServerLimits(header_timeout=0)


async def test_a_head_past_the_limit_is_answered_431() -> None:
    async with serving(ServerLimits(max_header_bytes=1000)) as port:
        reader, writer = await connect(port)
        assert await healthz(reader, writer) == b"HTTP/1.1 200 OK\r\n"
        writer.write(HEAD + b"X-Pad: " + b"a" * 1000 + b"\r\n")
        _, answer = await closed_after(reader)
        assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
        writer.close()


async def test_an_unfinished_head_is_closed_after_the_header_timeout() -> None:
    async with serving(ServerLimits(header_timeout=0.3)) as port:
        silent, _ = await connect(port)
        reader, writer = await connect(port)
        writer.write(HEAD)
        for waited, answer in await asyncio.gather(closed_after(silent), closed_after(reader)):
            assert 0.1 < waited < 2 and answer == b""
        writer.close()


async def test_a_kept_alive_connection_may_idle_longer_than_a_head_takes() -> None:
    async with serving(ServerLimits(header_timeout=0.3, idle_timeout=1.5)) as port:
        reader, writer = await connect(port)
        assert await healthz(reader, writer) == b"HTTP/1.1 200 OK\r\n"
        await asyncio.sleep(0.6)
        assert await healthz(reader, writer) == b"HTTP/1.1 200 OK\r\n"
        waited, _ = await closed_after(reader)
        assert 1.0 < waited < 3
        writer.close()


async def test_a_probe_gets_through_a_server_full_of_slow_clients() -> None:
    async with serving(ServerLimits(max_connections=4)) as port:
        slow = [await connect(port) for _ in range(4)]
        for _, writer in slow:
            writer.write(HEAD)
        await asyncio.sleep(0.1)
        reader, writer = await connect(port)
        assert await healthz(reader, writer) == b"HTTP/1.1 200 OK\r\n"
        waited, _ = await closed_after(slow[0][0])  # the one that waited longest
        assert waited < 1
        for _, slow_writer in slow[1:]:
            assert not slow_writer.is_closing()
            slow_writer.close()
        writer.close()


async def test_a_malformed_request_is_answered_400_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving(ServerLimits()) as port:
        reader, writer = await connect(port)
        writer.write(HEAD + b"X-Long: " + b"a" * 10000 + b"\r\n\r\n")  # past aiohttp's 8,190
        _, answer = await closed_after(reader)
        assert answer.startswith((b"HTTP/1.0 400 ", b"HTTP/1.1 400 "))
        writer.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
