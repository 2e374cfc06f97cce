"""The dashboard for the tests and the benchmark that look at it: one serving a namespace's
MPIJobs, and a reader of its live streams (server-sent events)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator

import aiohttp

from controllers.dashboard.server import serve
from controllers.dashboard.view import ClusterView
from controllers.kinds import installed_kinds
from jobcore import Client
from jobcore.testing import eventually


@contextlib.asynccontextmanager
async def mpijob_dashboard(client: Client, namespace: str) -> AsyncIterator[str]:
    """`jobcore dashboard`'s pages over the MPIJobs of `namespace` (their CRD installed),
    read with `client`, once it has listed them: its address."""
    view = ClusterView(client, installed_kinds(["mpijob"]), namespace)
    async with serve(view, port=0) as url:
        await eventually(view.jobs["mpijob"].has_synced, timeout=10)
        yield url


async def events_of(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, str]]:
    """The server-sent events of `response`: (name, data)."""
    name, data = "message", []
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])
        elif not line and data:
            yield name, "\n".join(data)
            name, data = "message", []


async def until(events: AsyncIterator[tuple[str, str]], pattern: str) -> str:
    """The data of the first event that matches `pattern`."""
    async for _, data in events:
        if re.search(pattern, data, re.S):
            return data
    raise AssertionError(f"the stream ended before {pattern!r}")


def live_stream(page: str) -> str:
    """The path of the live stream a page connects to."""
    found = re.search(r'sse-connect="([^"]+)"', page)
    assert found, page
    return found.group(1).replace("&amp;", "&")
