"""A streamed answer read line by line: a watch's as events, a followed log's as cut lines.

A watch's event is read however long it is; one that cannot be read is skipped. A log's line is
cut at a length, so that a line without end never grows the reader.

The API server sends one JSON event per line. A line has no length limit there: an object may
be as large as a request body (3 MiB), and the server's JSON encoder writes each `<`, `>`, `&`
and control character as six bytes (`\\u003c`), so one stored object can make a line of
tens of MiB. Lines are therefore split here over the stream's chunks, without aiohttp's line
limit (twice the client's read buffer), up to an explicit cap above anything the server can
store.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import AsyncIterable
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import structlog

from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import api_error
from jobcore._runtime.jsoncodec import loads
from jobcore._runtime.jsoncodec import loads_without_managed_fields
from jobcore._runtime.resources import Object

WatchEvent = tuple[str, Object]
"""`(type, object)` with type ADDED, MODIFIED, DELETED or BOOKMARK."""

MAX_EVENT_BYTES = 64 * 2**20
"""The longest watch event read. The largest object the server stores comes from a 3 MiB
request body; escaped six bytes for one, with its keys repeated in `managedFields`, it makes a
line of at most about 2 x 6 x 3 MiB = 36 MiB. A longer line is skipped, not read."""

_REMEMBERED = 1024
"""How many skipped events a client remembers, so that each is logged once."""
_log = structlog.get_logger("jobcore.client")


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line longer than the cap, dropped as it arrived: its size and a digest of it."""

    size: int
    digest: bytes


class Lines:
    """Splits chunks of a stream into lines; a line past `limit` bytes is dropped as it
    arrives (an `Oversized` stands for it), so it is never held whole."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._pending: list[bytes] = []
        self._size = 0
        self._dropping: hashlib.blake2b | None = None

    def feed(self, chunk: bytes) -> Iterator[bytes | Oversized]:
        """The lines that `chunk` completes, without their newlines."""
        *ends, rest = chunk.split(b"\n")
        for end in ends:
            self._add(end)
            yield self._take()
        self._add(rest)

    def tail(self) -> bytes:
        """What came after the last newline: at the stream's end, an event cut short."""
        return b"" if self._dropping is not None else b"".join(self._pending)

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        self._size += len(piece)
        if self._dropping is None and self._size <= self._limit:
            self._pending.append(piece)
            return
        if self._dropping is None:
            self._dropping = hashlib.blake2b(digest_size=16)
            for part in self._pending:
                self._dropping.update(part)
            self._pending.clear()
        self._dropping.update(piece)

    def _take(self) -> bytes | Oversized:
        line: bytes | Oversized
        if self._dropping is not None:
            line = Oversized(self._size, self._dropping.digest())
            self._dropping = None
        else:
            line = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
            self._pending.clear()
        self._size = 0
        return line


class SkippedEvents:
    """The events a client skipped, by digest: each is logged once, not on every re-watch
    that meets it again."""

    def __init__(self) -> None:
        self._seen: collections.OrderedDict[tuple[str, bytes], None] = collections.OrderedDict()

    def skip(self, what: str, digest: bytes, reason: str, **details: object) -> None:
        key = (what, digest)
        if key in self._seen:
            self._seen.move_to_end(key)
            _log.debug("skipped a watch event again", watch=what, reason=reason, **details)
            return
        self._seen[key] = None
        if len(self._seen) > _REMEMBERED:
            self._seen.popitem(last=False)
        _log.warning("skipped a watch event it cannot read", watch=what, reason=reason, **details)


async def watch_events(
    chunks: AsyncIterable[bytes],
    what: str,
    skipped: SkippedEvents,
    *,
    limit: int,
    without_managed_fields: bool = False,
) -> AsyncIterator[WatchEvent]:
    """The events of a watch's body, `chunks`; `what` names the watch in errors and logs.

    An event longer than `limit` bytes, or a whole line that is not an event, is skipped and
    told to `skipped`: watching again from the same resourceVersion would meet it again, so
    failing would stall the watch for good. The stream ending inside an event raises a
    retryable `ApiError` (status 0), as a broken connection does; an ERROR event raises the
    `ApiError` it carries. `without_managed_fields` leaves each object's
    `metadata.managedFields` undecoded (`loads_without_managed_fields`).
    """
    decode = loads_without_managed_fields if without_managed_fields else loads
    lines = Lines(limit)
    async for chunk in chunks:
        for line in lines.feed(chunk):
            if isinstance(line, Oversized):
                skipped.skip(what, line.digest, "too long", size=line.size, limit=limit)
                continue
            if not line.strip():
                continue
            event = _event(line, decode)
            if event is None:
                digest = hashlib.blake2b(line, digest_size=16).digest()
                start = line[:200].decode(errors="replace")
                skipped.skip(what, digest, "not an event", size=len(line), start=start)
                continue
            kind, obj = event
            if kind == "ERROR":
                raise api_error(int(obj.get("code") or 500), obj)
            yield event
    if lines.tail().strip():
        raise ApiError(0, "ConnectionError", f"watch {what}: the stream ended inside an event")


def _event(line: bytes, decode: Callable[[bytes], Any]) -> WatchEvent | None:
    try:
        event = decode(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(event, dict):
        return None
    kind, obj = event.get("type"), event.get("object")
    if not isinstance(kind, str) or not isinstance(obj, dict):
        return None
    if kind != "ERROR" and not isinstance(obj.get("metadata"), dict):
        return None
    return kind, obj


async def cut_lines(chunks: AsyncIterable[bytes], *, limit: int) -> AsyncIterator[bytes]:
    """The lines of `chunks` as each is complete, without their newlines, and then what follows
    the last newline, if anything; a line longer than `limit` bytes is cut there and the rest
    of it dropped as it arrives, so a line without end never grows the reader."""
    kept: list[bytes] = []
    size = 0
    async for chunk in chunks:
        *ends, rest = chunk.split(b"\n")
        for end in ends:
            kept.append(end[: limit - size])
            yield b"".join(kept)
            kept, size = [], 0
        if size < limit and rest:
            kept.append(rest[: limit - size])
            size += len(kept[-1])
    if kept:
        yield b"".join(kept)
