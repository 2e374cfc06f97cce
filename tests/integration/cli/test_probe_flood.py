"""`jobcore run`'s probe server under 1,000 unfinished requests over loopback: the controller's
memory barely grows, every connection is dropped within a minute, and `/healthz` answers the
kubelet's probes meanwhile."""

from __future__ import annotations

import asyncio
import resource
import socket
import sys
import time
from collections.abc import Awaitable
from typing import TypeVar

import pytest

from jobcore import Client
from tests.integration.runtime.test_cache_memory import ready_controller
from tests.integration.runtime.test_cache_memory import rss_mb

pytestmark = pytest.mark.integration

CONNECTIONS = 1_000
HEADERS = 126
HEADER_SIZE = 8_000
"""Each flooding client's head: 126 headers of 8,000 bytes, under aiohttp's bounds on their
number (128) and length (8,190), and no blank line to end it: 2 MB a connection before."""
RSS_GROWTH_LIMIT_MB = 20.0
HEADER_TIMEOUT = 5.0
PROBE_TIMEOUT = 1.0
"""The kubelet's default `timeoutSeconds`."""
FAILURE_THRESHOLD = 3
"""The kubelet's default `failureThreshold`."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def unfinished_request(port: int, headers: int) -> float:
    """A client that sends a request line and `headers` headers of `HEADER_SIZE` bytes but never
    the blank line ending the head, then waits; when the server closed the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: controller\r\n")
        for n in range(headers):
            if reader.at_eof():
                break
            writer.write(b"X-Pad-%d: %s\r\n" % (n, b"a" * HEADER_SIZE))
            await writer.drain()
        await reader.read()
    except ConnectionError:
        pass
    finally:
        writer.close()
    return time.monotonic()


T = TypeVar("T")

PROBER = """
import sys, time, urllib.error, urllib.request
while True:
    try:
        with urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2])) as response:
            print(response.status, flush=True)
    except urllib.error.HTTPError as error:
        print(error.code, flush=True)
    except OSError:
        print(0, flush=True)
    time.sleep(0.2)
"""
"""The kubelet's probes, from a process of their own: `GET URL` every 0.2 s, each status
printed (0: no answer within the timeout)."""


async def probed_while(port: int, flood: Awaitable[T]) -> tuple[T, list[int]]:
    """Await `flood` while a prober process GETs `/healthz` as the kubelet does; the flood's
    result and the probes' statuses."""
    url = f"http://127.0.0.1:{port}/healthz"
    prober = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PROBER, url, str(PROBE_TIMEOUT), stdout=asyncio.subprocess.PIPE
    )
    try:
        result = await flood
    finally:
        prober.terminate()
        out, _ = await prober.communicate()
    return result, [int(line) for line in out.split()]


@pytest.fixture(autouse=True)
def enough_file_descriptors() -> None:
    """A socket a client here, another in the controller, which inherits the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 3 * CONNECTIONS:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 3 * CONNECTIONS), hard))


@pytest.mark.parametrize(
    ("headers", "within"),
    [(HEADERS, 60.0), (1, HEADER_TIMEOUT + 10)],
    ids=["large-heads", "slow-heads"],
)
async def test_unfinished_requests_cost_little_and_are_dropped_while_healthz_answers(
    client: Client, namespace: str, kubeconfig_path: str, headers: int, within: float
) -> None:
    port = free_port()
    options = ("--health-probe-bind-address", f"127.0.0.1:{port}")
    timeout = ("--http-header-timeout", str(HEADER_TIMEOUT))
    async with ready_controller(client, kubeconfig_path, namespace, *options, *timeout) as pid:
        before = rss_mb(pid)
        start = time.monotonic()
        flood = [asyncio.create_task(unfinished_request(port, headers)) for _ in range(CONNECTIONS)]
        (dropped, kept), statuses = await probed_while(port, asyncio.wait(flood, timeout=within))
        growth = rss_mb(pid, "VmHWM") - before
        for task in kept:
            task.cancel()
        await asyncio.gather(*kept, return_exceptions=True)
    last = max((task.result() for task in dropped), default=start) - start
    print(
        f"{CONNECTIONS} unfinished requests of {headers} x {HEADER_SIZE}-byte headers: the "
        f"controller's peak RSS grew by {growth:.1f} MB; {len(dropped)} dropped, the last "
        f"after {last:.1f} s; /healthz answered {statuses.count(200)} of {len(statuses)} "
        "probes with 200"
    )
    assert growth < RSS_GROWTH_LIMIT_MB, f"the controller's peak RSS grew by {growth:.1f} MB"
    assert not kept, f"{len(kept)} of {CONNECTIONS} connections still open after {within:g} s"
    # The kubelet restarts a container after `failureThreshold` (3) probes in a row fail; here
    # they come every 0.2 s, not every 10 s, so three in a row is 0.6 s without an answer.
    runs = "".join("." if status == 200 else "x" for status in statuses)
    assert statuses and "x" * FAILURE_THRESHOLD not in runs, statuses
