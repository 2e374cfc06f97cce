"""The list/watch loop that keeps a store equal to what a lister/watcher it is handed serves."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from dataclasses import KW_ONLY
from dataclasses import dataclass
from typing import Protocol

import structlog

from jobcore._runtime.client import Client
from jobcore._runtime.errors import GoneError
from jobcore._runtime.jsoncodec import dumps
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore._runtime.resources import Resource
from jobcore._runtime.retry import asked_wait
from jobcore._runtime.store import Store
from jobcore._runtime.watchstream import WatchEvent

PAGE_BYTES = 4 * 1024 * 1024
"""About how much JSON one list page holds (decoded, about three times as much memory)."""
FIRST_PAGE = 8
"""Objects in a list's first page, before their size is known: 8 of the largest objects the
API server stores (about 1.5 MB) stay within a few PAGE_BYTES."""

_log = structlog.get_logger("jobcore.informer")


class ListerWatcher(Protocol):
    """Where a list/watch loop reads one resource's objects.

    `list` returns one page: `items`, `metadata.resourceVersion` and, when more follow,
    `metadata.continue`. `watch` streams (type, object) events after `resource_version` until
    the server ends it; it raises `GoneError` when that version has expired (the loop then
    lists again) and any other exception for a failure the loop retries with backoff.
    """

    async def list(self, *, limit: int, continue_token: str | None) -> Object: ...

    def watch(self, *, resource_version: str | None, timeout: int) -> AsyncIterator[WatchEvent]: ...


@dataclass(frozen=True)
class ClientListerWatcher:
    """Lists and watches `resource` in `namespace` through jobcore's `Client`, narrowed by
    selectors, with the watch's inactivity timeout and managedFields left undecoded when
    asked (`Client.watch`)."""

    client: Client
    resource: Resource
    _: KW_ONLY
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    inactivity_timeout: float = 90.0
    without_managed_fields: bool = False

    async def list(self, *, limit: int, continue_token: str | None) -> Object:
        return await self.client.list(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=limit,
            continue_token=continue_token,
        )

    def watch(self, *, resource_version: str | None, timeout: int) -> AsyncIterator[WatchEvent]:
        return self.client.watch(
            self.resource,
            self.namespace,
            resource_version=resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
            inactivity_timeout=self.inactivity_timeout,
            without_managed_fields=self.without_managed_fields,
        )


def backoff(failures: int, *, max_backoff: float) -> float:
    """The pause after `failures` failures in a row: doubling from 0.2 s up to `max_backoff`,
    give or take a fifth so that many loops do not retry in step."""
    delay: float = min(max_backoff, 0.1 * 2.0 ** min(failures, 10))
    return delay * random.uniform(0.8, 1.2)


def _json_size(obj: Object) -> int:
    """`obj`'s size as JSON; PAGE_BYTES for one nested deeper than Python recurses, so that
    the next page is small."""
    try:
        return len(dumps(obj))
    except RecursionError:
        return PAGE_BYTES


class ListWatch:
    """Lists `source` into `store`, then watches it, until cancelled.

    After a watch ends it resumes from the last resourceVersion seen (bookmarks keep that
    fresh). When the source answers 410 Gone it lists again and replaces the store, which
    reports what changed meanwhile, deletions included.
    """

    def __init__(
        self,
        store: Store,
        source: ListerWatcher,
        *,
        page_size: int = 500,
        watch_timeout: int = 300,
        max_backoff: float = 30.0,
    ) -> None:
        self._store = store
        self._source = source
        self._page_size = page_size
        self._watch_timeout = watch_timeout
        self._max_backoff = max_backoff
        self._resource_version: str | None = None
        self._log = _log.bind(resource=store.resource.plural, namespace=store.namespace)

    @property
    def resource_version(self) -> str | None:
        """The last resourceVersion seen, from a list, a watch event or a bookmark."""
        return self._resource_version

    async def run(self) -> None:
        """List, then watch until cancelled; failures are retried with backoff, never raised.

        A resource that is not served yet (a CRD installed later) is retried the same way, so
        the store syncs as soon as it exists.
        """
        failures = 0
        while True:
            started: float | None = None
            asked = 0.0
            try:
                if self._resource_version is None:
                    await self.relist()
                started = time.monotonic()
                await self._watch()
                if time.monotonic() - started > 1.0:
                    failures = 0
                    continue
                failures += 1  # a watch that ends at once must not become a busy loop
                self._log.debug("watch ended at once", failures=failures)
            except GoneError:
                self._log.info("resource version expired, listing again")
                self._resource_version = None
                continue
            except Exception as exc:  # a list/watch must outlive any failure
                # A watch that ran a while before it broke (a cut connection) was healthy:
                # back off from the start, not from every cut so far.
                if started is not None and time.monotonic() - started > 1.0:
                    failures = 0
                failures += 1
                self._log.warning("list/watch failed", error=str(exc), failures=failures)
                asked = asked_wait(exc)  # a pause the server asked for (429 Retry-After)
            await asyncio.sleep(max(asked, backoff(failures, max_backoff=self._max_backoff)))

    async def relist(self) -> None:
        """List page by page into the store, each page sized to about PAGE_BYTES by the last
        one's objects: a page of 500 objects of 1 MB (a tenant's ConfigMaps) would hold
        gigabytes decoded."""
        items: dict[ObjectKey, Object] = {}
        continue_token: str | None = None
        limit = min(FIRST_PAGE, self._page_size)
        while True:
            page = await self._source.list(limit=limit, continue_token=continue_token)
            listed = 0
            for raw in page["items"]:
                listed += _json_size(raw)
                # List items carry no kind; give cached objects the same shape as watched ones.
                raw.setdefault("kind", self._store.resource.kind)
                raw.setdefault("apiVersion", self._store.resource.api_version)
                obj = self._store.admit(raw)
                if obj is not None:
                    items[ObjectKey.of(obj)] = obj
                    await asyncio.sleep(0)  # see _watch
            continue_token = page["metadata"].get("continue")
            if not continue_token:
                break
            per_object = listed / max(1, len(page["items"]))
            limit = max(1, min(self._page_size, int(PAGE_BYTES / max(per_object, 1.0))))
            del page  # not held while the next one arrives
        self._store.replace(items)
        self._resource_version = page["metadata"]["resourceVersion"]

    async def _watch(self) -> None:
        timeout = int(self._watch_timeout * random.uniform(1.0, 2.0))
        async for event_type, raw in self._source.watch(
            resource_version=self._resource_version, timeout=timeout
        ):
            self._store.apply(event_type, raw)
            self._resource_version = raw["metadata"]["resourceVersion"]
            # Events the stream has buffered come without a pause: a backlog of large objects
            # (a wide job's pods) must not hold the loop that probes and leases share.
            await asyncio.sleep(0)
