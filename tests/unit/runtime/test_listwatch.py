"""Unit tests for the list/watch loop: lists into the store, watches from the list's version,
relists on 410 Gone without missing a delete, follows bookmarks, retries failures with backoff.

No API server: the loop is handed a scripted lister/watcher.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

import pytest

from jobcore import ApiError
from jobcore import GoneError
from jobcore import Object
from jobcore import controller_of
from jobcore._runtime.listwatch import FIRST_PAGE
from jobcore._runtime.listwatch import ListWatch
from jobcore._runtime.listwatch import backoff
from jobcore._runtime.resources import PODS
from jobcore._runtime.store import Store
from jobcore._runtime.watchstream import WatchEvent
from jobcore.testing import eventually
from tests.unit.runtime.test_informer_store import Recorder
from tests.unit.runtime.test_informer_store import pod


@dataclass
class Watch:
    """What one watch does: stream `events`, then raise `error` (or end, with None)."""

    events: list[WatchEvent] = field(default_factory=list)
    error: Exception | None = None


@dataclass
class ScriptedSource:
    """A lister/watcher over a server's `objects` at `resource_version`; each watch plays the
    next of `watches`, and once they are played, streams nothing until cancelled."""

    objects: list[Object]
    resource_version: str
    watches: list[Watch] = field(default_factory=list)
    list_errors: list[Exception] = field(default_factory=list)
    limits: list[int] = field(default_factory=list)
    watched_from: list[str | None] = field(default_factory=list)
    watched_at: list[float] = field(default_factory=list)

    async def list(self, *, limit: int, continue_token: str | None) -> Object:
        if self.list_errors:
            raise self.list_errors.pop(0)
        self.limits.append(limit)
        start = int(continue_token or 0)
        page = [dict(obj) for obj in self.objects[start : start + limit]]
        meta = {"resourceVersion": self.resource_version}
        if start + limit < len(self.objects):
            meta["continue"] = str(start + limit)
        return {"items": page, "metadata": meta}

    async def watch(
        self, *, resource_version: str | None, timeout: int
    ) -> AsyncIterator[WatchEvent]:
        self.watched_from.append(resource_version)
        self.watched_at.append(time.monotonic())
        if not self.watches:
            await asyncio.Event().wait()
        watch = self.watches.pop(0)
        for event in watch.events:
            yield event
        if watch.error is not None:
            raise watch.error


def bare(obj: Object) -> Object:
    """`obj` as a list item: without kind and apiVersion."""
    return {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}


@contextlib.asynccontextmanager
async def running(loop: ListWatch) -> AsyncIterator[None]:
    task = asyncio.create_task(loop.run())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def started(
    source: ScriptedSource, keep: Callable[[Object], bool] | None = None
) -> tuple[Store, Recorder, ListWatch]:
    store = Store(PODS, keep=keep)
    recorder = Recorder()
    store.add_handler(recorder)
    return store, recorder, ListWatch(store, source, max_backoff=0.05)


async def test_lists_then_watches_from_the_lists_resource_version() -> None:
    source = ScriptedSource(
        [bare(pod("a", 1)), bare(pod("b", 2))],
        "10",
        [Watch([("MODIFIED", pod("a", 11)), ("DELETED", pod("b", 12))])],
    )
    store, recorder, loop = started(source)
    async with running(loop):
        await store.wait_for_sync()
        await eventually(lambda: loop.resource_version == "12")
    assert recorder.take() == [
        ("add", "default/a", "1"),
        ("add", "default/b", "2"),
        ("update", "default/a", "1", "11"),
        ("delete", "default/b", "12"),
    ]
    assert source.watched_from[0] == "10"
    assert store.get("a", "default") == pod("a", 11), "listed objects get their kind"


async def test_a_410_lists_again_and_reports_the_delete_it_missed() -> None:
    source = ScriptedSource(
        [bare(pod("keep", 1)), bare(pod("doomed", 2)), bare(pod("changed", 3))],
        "10",
        [Watch([("ADDED", pod("new", 11))], error=GoneError(410, "Expired"))],
    )
    store, recorder, loop = started(source)
    async with running(loop):
        await store.wait_for_sync()
        await eventually(lambda: len(source.watched_from) == 1)
        # Meanwhile, unseen by the watch: one object deleted, one changed.
        source.objects = [bare(pod("keep", 1)), bare(pod("changed", 14)), bare(pod("new", 11))]
        source.resource_version = "20"
        await eventually(lambda: len(source.watched_from) == 2)
    assert source.watched_from == ["10", "20"], "the next watch starts from the new list"
    assert recorder.take()[3:] == [
        ("add", "default/new", "11"),
        ("delete", "default/doomed", "2"),
        ("update", "default/changed", "3", "14"),
    ], "only what changed is reported, once"
    assert sorted(obj["metadata"]["name"] for obj in store.list()) == ["changed", "keep", "new"]


async def test_a_long_list_is_read_in_pages_into_the_store() -> None:
    objects = [bare(pod(f"p-{i:02}", i)) for i in range(3 * FIRST_PAGE)]
    source = ScriptedSource(objects, "99")
    store, recorder, loop = started(source)
    async with running(loop):
        await store.wait_for_sync()
    assert source.limits[0] == FIRST_PAGE and len(source.limits) == 2
    assert len(store) == 3 * FIRST_PAGE
    assert len(recorder.take()) == 3 * FIRST_PAGE
    assert loop.resource_version == "99"


async def test_bookmarks_and_refused_objects_advance_the_resource_version() -> None:
    bookmark = {"kind": "Pod", "metadata": {"resourceVersion": "30"}}
    source = ScriptedSource(
        [],
        "10",
        [Watch([("ADDED", pod("foreign", 20))]), Watch([("BOOKMARK", bookmark)])],
    )
    store, recorder, loop = started(source, keep=lambda obj: controller_of(obj) is not None)
    async with running(loop):
        await eventually(lambda: len(source.watched_from) == 3)
    assert source.watched_from == ["10", "20", "30"]
    assert loop.resource_version == "30"
    assert recorder.take() == [] and len(store) == 0


async def test_a_failing_list_or_watch_is_retried_after_a_pause() -> None:
    cut = ApiError(0, "connection reset")
    source = ScriptedSource(
        [bare(pod("a", 1))],
        "10",
        [Watch(error=cut), Watch([("MODIFIED", pod("a", 11))], error=cut), Watch(error=cut)],
        list_errors=[ApiError(404, "NotFound")],  # a resource not served yet
    )
    store, recorder, loop = started(source)
    async with running(loop):
        await store.wait_for_sync()
        await eventually(lambda: len(source.watched_from) == 4)
    assert source.watched_from == ["10", "10", "11", "11"], "each retry resumes where it was"
    pauses = [b - a for a, b in zip(source.watched_at, source.watched_at[1:], strict=False)]
    assert min(pauses) >= 0.8 * 0.05, pauses
    assert recorder.take() == [("add", "default/a", "1"), ("update", "default/a", "1", "11")]


async def test_a_retry_waits_as_long_as_the_server_asked() -> None:
    too_many = ApiError(429, "TooManyRequests", retry_after=0.3)
    source = ScriptedSource([], "10", [Watch(error=too_many)])
    *_, loop = started(source)
    async with running(loop):
        await eventually(lambda: len(source.watched_from) == 2)
    assert source.watched_at[1] - source.watched_at[0] >= 0.3, "not the 0.05 s backoff"


@pytest.mark.parametrize(("failures", "low", "high"), [(1, 0.16, 0.24), (3, 0.64, 0.96)])
def test_the_backoff_doubles_with_each_failure(failures: int, low: float, high: float) -> None:
    assert low <= backoff(failures, max_backoff=30.0) <= high


def test_the_backoff_stops_growing_at_its_maximum() -> None:
    assert 24.0 <= backoff(40, max_backoff=30.0) <= 36.0
