"""Reading watch events from a stream's chunks: lines of any length, skips logged once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from structlog.testing import capture_logs

from jobcore import ApiError
from jobcore._runtime.watchstream import Lines
from jobcore._runtime.watchstream import Oversized
from jobcore._runtime.watchstream import SkippedEvents
from jobcore._runtime.watchstream import cut_lines
from jobcore._runtime.watchstream import watch_events


def split(chunks: list[bytes], limit: int = 100) -> list[bytes | Oversized]:
    lines = Lines(limit)
    return [line for chunk in chunks for line in lines.feed(chunk)]


def test_lines_are_joined_across_chunks_and_split_within_them() -> None:
    assert split([b"ab", b"c\nd", b"\n\nef\ng", b"h"]) == [b"abc", b"d", b"", b"ef"]


def test_a_line_past_the_limit_is_dropped_as_it_arrives_and_stands_as_its_size() -> None:
    lines = Lines(10)
    assert list(lines.feed(b"0123456789")) == []
    assert list(lines.feed(b"abc")) == []
    assert lines.tail() == b""  # nothing of it is held
    (long,) = lines.feed(b"de\nok")
    assert isinstance(long, Oversized)
    assert long.size == 15
    assert list(lines.feed(b"\n")) == [b"ok"]
    again = split([b"01234", b"56789abcde\n"], limit=10)
    assert again == [long]  # the same line, the same digest


def event(name: str) -> bytes:
    obj = {"metadata": {"name": name, "resourceVersion": "1"}}
    return json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n"


async def chunks_of(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def names(skipped: SkippedEvents, *chunks: bytes, limit: int = 1000) -> list[str]:
    events = watch_events(chunks_of(*chunks), "/w", skipped, limit=limit)
    return [obj["metadata"]["name"] async for _, obj in events]


async def test_an_unreadable_event_is_skipped_and_logged_once_per_client() -> None:
    skipped = SkippedEvents()
    stream = (event("a"), b'{"type": 1}\n', event("b" * 2000), b"[oops\n", event("c"))
    with capture_logs() as logs:
        assert await names(skipped, *stream) == ["a", "c"]
        assert await names(skipped, *stream) == ["a", "c"]
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert [e["reason"] for e in warnings] == ["not an event", "too long", "not an event"]


async def test_a_stream_that_ends_inside_an_event_fails_as_a_broken_connection() -> None:
    with pytest.raises(ApiError) as raised:
        await names(SkippedEvents(), event("a"), b'{"type":"ADDED","obj')
    assert raised.value.status == 0
    assert raised.value.retryable


async def test_a_logs_lines_are_cut_at_the_limit_across_chunks_and_the_last_kept() -> None:
    chunks = chunks_of(b"ab", b"c\n0123", b"456789xyz", b"tail\nok\n\nno newline")
    lines = [line async for line in cut_lines(chunks, limit=5)]
    assert lines == [b"abc", b"01234", b"ok", b"", b"no ne"]
