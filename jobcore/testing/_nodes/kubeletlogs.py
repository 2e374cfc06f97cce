"""The kubelet's log endpoint a kit node serves, so that `pods/log` and `kubectl logs` work.

The API server proxies `pods/log` to the node's `status.daemonEndpoints.kubeletEndpoint` at its
InternalIP, over HTTPS without checking the certificate (no kubelet CA is configured), so one
self-signed certificate serves every node. `GET /containerLogs/{namespace}/{pod}/{container}`
takes the kubelet's `follow`, `tailLines`, `limitBytes` and `previous`; a request holds at most
one chunk and the tail window in memory, whatever the log's size.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import os
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from typing import Protocol

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from jobcore._runtime.informer import Informer

CHUNK_BYTES = 2**16
"""The most of a log one read takes."""
TAIL_WINDOW_BYTES = 2**20
"""How far back from a log's end `tailLines` looks for its lines."""
MEMORY_LOG_BYTES = 2**20
"""How much of a container's log a `MemoryLog` keeps: the end of it."""
_POLL_SECONDS = 0.1
"""How often a follower looks for more of the log and whether its container still runs."""
_SHUTDOWN_SECONDS = 2.0
"""How long a stopping server waits for its requests to end before it cancels them."""


class ContainerLog(Protocol):
    """A log that may grow while it is read: bytes at offsets counted from its start."""

    def size(self) -> int:
        """How many bytes were written so far."""

    def read(self, offset: int, size: int) -> tuple[int, bytes]:
        """Up to `size` bytes from `offset`, or from the first byte still kept if that is
        later; with the offset they start at."""

    def close(self) -> None:
        """The reader is done with it."""


LogFinder = Callable[[str, str, str, bool], ContainerLog | None]
"""(namespace, pod, container, previous) -> that container's log, or None if it has none."""


class MemoryLog:
    """A log kept in memory: its last `MEMORY_LOG_BYTES`, appended to by a simulated node."""

    def __init__(self) -> None:
        self._data = bytearray()
        self._dropped = 0

    def write(self, data: bytes) -> None:
        self._data += data
        excess = len(self._data) - MEMORY_LOG_BYTES
        if excess > 0:
            del self._data[:excess]
            self._dropped += excess

    def size(self) -> int:
        return self._dropped + len(self._data)

    def read(self, offset: int, size: int) -> tuple[int, bytes]:
        start = max(offset, self._dropped)
        at = start - self._dropped
        return start, bytes(self._data[at : at + size])

    def close(self) -> None:
        pass


class FileLog:
    """A container's log file, held open: a restart that renames it to the previous run's
    leaves this reader on the run it started with."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("rb")

    def size(self) -> int:
        return os.fstat(self._file.fileno()).st_size

    def read(self, offset: int, size: int) -> tuple[int, bytes]:
        return offset, os.pread(self._file.fileno(), size, offset)

    def close(self) -> None:
        self._file.close()


class LogServer:
    """Serves the containers' logs of the Pods bound to `node` (as its informer sees them).

    A Pod or container the node does not run answers 404, a container not started yet 400,
    as the kubelet's do. A follower ends once the container it began with is no longer
    running (ended, restarted, or its Pod gone) and its log is read to the end, or once the
    server stops.
    """

    def __init__(self, node: str, pods: Informer, find: LogFinder) -> None:
        self._node = node
        self._pods = pods
        self._find = find
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=_SHUTDOWN_SECONDS)
        self._stopping = False

    async def start(self) -> int:
        """Listen on an ephemeral port of 127.0.0.1; return the port."""
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=_tls())
        await site.start()
        return int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        self._stopping = True
        await self._runner.cleanup()

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        namespace, pod, name = (request.match_info[k] for k in ("namespace", "pod", "container"))
        previous = request.query.get("previous") == "true"
        status = self._container_status(namespace, pod, name)
        if status is None:
            raise web.HTTPNotFound(text=f"pod {namespace}/{pod} has no container {name} here")
        waiting = (status.get("state") or {}).get("waiting")
        if waiting is not None and not previous:
            reason = waiting.get("reason", "ContainerCreating")
            raise web.HTTPBadRequest(
                text=f'container "{name}" in pod "{pod}" is waiting to start: {reason}'
            )
        log = self._find(namespace, pod, name, previous)
        if log is None and previous:
            raise web.HTTPBadRequest(
                text=f'previous terminated container "{name}" in pod "{pod}" not found'
            )
        log = log or MemoryLog()
        try:
            return await self._send(request, log, (namespace, pod, name), status)
        finally:
            log.close()

    async def _send(
        self,
        request: web.Request,
        log: ContainerLog,
        where: tuple[str, str, str],
        status: dict[str, Any],
    ) -> web.StreamResponse:
        query = request.query
        follow = query.get("follow") == "true" and query.get("previous") != "true"
        budget = int(query["limitBytes"]) if "limitBytes" in query else None
        offset = _tail_start(log, int(query["tailLines"])) if "tailLines" in query else 0
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        restarts = status.get("restartCount", 0)
        while budget is None or budget > 0:
            want = CHUNK_BYTES if budget is None else min(CHUNK_BYTES, budget)
            offset, data = log.read(offset, want)
            if data:
                await response.write(data)
                offset += len(data)
                budget = None if budget is None else budget - len(data)
            elif not follow or not self._running(where, restarts):
                if log.read(offset, 1)[1]:
                    continue  # written just before it ended
                break
            else:
                await asyncio.sleep(_POLL_SECONDS)
        await response.write_eof()
        return response

    def _container_status(self, namespace: str, pod: str, name: str) -> dict[str, Any] | None:
        """The container's status on a Pod bound to this node (waiting, before it has one);
        None if there is no such container here."""
        obj = self._pods.get(pod, namespace)
        if obj is None or obj["spec"].get("nodeName") != self._node:
            return None
        spec = obj["spec"]
        if name not in {c["name"] for c in [*spec["containers"], *spec.get("initContainers", ())]}:
            return None
        status = obj.get("status") or {}
        for item in [
            *status.get("containerStatuses", ()),
            *status.get("initContainerStatuses", ()),
        ]:
            if item["name"] == name:
                return dict(item)
        return {"state": {"waiting": {"reason": "ContainerCreating"}}}

    def _running(self, where: tuple[str, str, str], restarts: int) -> bool:
        status = self._container_status(*where)
        return (
            not self._stopping
            and status is not None
            and "running" in (status.get("state") or {})
            and status.get("restartCount", 0) == restarts
        )


def _tail_start(log: ContainerLog, lines: int) -> int:
    """The offset of the last `lines` lines (within `TAIL_WINDOW_BYTES` of the end)."""
    size = log.size()
    if lines <= 0:
        return size
    start, window = log.read(max(0, size - TAIL_WINDOW_BYTES), TAIL_WINDOW_BYTES)
    end = len(window) - 1 if window.endswith(b"\n") else len(window)
    for _ in range(lines):
        end = window.rfind(b"\n", 0, end)
        if end < 0:
            return start
    return start + end + 1


@functools.cache
def _tls() -> ssl.SSLContext:
    """A server context with a self-signed EC certificate for 127.0.0.1, made once a process."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jobcore-kit-kubelet")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="jobcore-kubelet-") as folder:
        cert, private = Path(folder, "tls.crt"), Path(folder, "tls.key")
        cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        private.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        context.load_cert_chain(cert, private)
    return context
