"""Which log a job's page and `jobcore logs` show, and the page's live copy of it.

The launcher's (the pod of replica type `launcher`, where a kind has one) unless a replica is
asked for; a pod's container is the one the kind names for its replica type, else its first.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
from collections.abc import AsyncIterator
from collections.abc import Sequence
from typing import Any

from controllers.dashboard.sse import EventStream
from jobcore import ApiError
from jobcore import Client
from jobcore import ForbiddenError
from jobcore import NotFoundError
from jobcore import Object
from jobcore.jobs import REPLICA_INDEX_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import JobKind
from jobcore.launcher import LAUNCHER

TAIL_LINES = 500
"""How many of the log's last lines a page starts with."""
QUEUED_LINES = 1000
"""How many lines may wait for a slow page before reading the log waits too."""
RETRY_SECONDS = 2.0
"""How long to wait before trying again to follow a container that has not started."""


def log_pod(pods: Sequence[Object], replica: str | None = None) -> Object | None:
    """The pod whose log to show: the replica `type-index` (or `type`, index 0) asked for,
    else the launcher, else the first pod."""

    def labels(pod: Object) -> dict[str, str]:
        return pod["metadata"].get("labels") or {}

    def named(wanted: str) -> Object | None:
        kind, _, index = wanted.rpartition("-") if wanted[-1:].isdigit() else (wanted, "", "0")
        for pod in pods:
            given = labels(pod)
            if (
                given.get(REPLICA_TYPE_LABEL) == kind
                and given.get(REPLICA_INDEX_LABEL, "0") == index
            ):
                return pod
        return None

    if replica:
        return named(replica)
    return named(LAUNCHER) or (pods[0] if pods else None)


def log_container(kind: JobKind[Any], pod: Object) -> str | None:
    replica = (pod["metadata"].get("labels") or {}).get(REPLICA_TYPE_LABEL, "")
    named = kind.containers.get(replica) if replica else None
    containers = (pod.get("spec") or {}).get("containers") or ()
    return named or (containers[0].get("name") if containers else None)


async def stream_log(
    client: Client, stream: EventStream, pod: Object, container: str | None
) -> None:
    """Send the log's last lines, then each new one, until the container ends; each line
    escaped, as text, in its own element."""
    meta = pod["metadata"]
    while True:
        try:
            lines = client.follow_pod_log(
                meta["name"], meta["namespace"], container=container, tail_lines=TAIL_LINES
            )
            await _relay(lines, stream)
            break
        except (NotFoundError, ForbiddenError) as error:  # gone, or not ours to read
            await stream.send("status", html.escape(f"no log: {error}"))
            break
        except ApiError as error:  # not started yet (400), or the node cannot be reached
            await stream.send("status", html.escape(f"waiting for the log: {error}"))
            await asyncio.sleep(RETRY_SECONDS)
    await stream.send("end", "")


async def _relay(lines: AsyncIterator[str], stream: EventStream) -> None:
    """Send the lines as they come, together those that came together (one chunk of the
    answer), so a burst is one event rather than one per line."""
    queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=QUEUED_LINES)

    async def read() -> None:
        try:
            async for line in lines:
                await queue.put(f"<div>{html.escape(line)}</div>")
        finally:
            await queue.put(None)

    reader = asyncio.create_task(read())
    try:
        ended = False
        while not ended:
            batch = [await queue.get()]
            while not queue.empty():
                batch.append(queue.get_nowait())
            ended = None in batch
            if text := "".join(line for line in batch if line is not None):
                await stream.send("line", text)
        await reader  # the reader's error, if the answer broke
    finally:
        if not reader.done():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
