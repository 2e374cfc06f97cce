"""A list+watch cache of one resource that tells handlers about every change exactly once."""

from __future__ import annotations

import asyncio
import builtins
import random
import time
from collections.abc import Callable
from collections.abc import Mapping
from typing import Protocol
from typing import TypedDict

import structlog

from jobcore._runtime.client import Client
from jobcore._runtime.compact import compact
from jobcore._runtime.errors import GoneError
from jobcore._runtime.filing import CONTROLLER_UID_INDEX
from jobcore._runtime.filing import NAMESPACE_INDEX
from jobcore._runtime.filing import IndexFunc
from jobcore._runtime.filing import Keep
from jobcore._runtime.filing import Transform
from jobcore._runtime.filing import controller_key
from jobcore._runtime.filing import index_by_controller_uid
from jobcore._runtime.filing import index_by_namespace
from jobcore._runtime.filing import strip_bulk
from jobcore._runtime.jsoncodec import dumps
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore._runtime.resources import Resource
from jobcore._runtime.retry import asked_wait

PAGE_BYTES = 4 * 1024 * 1024
"""About how much JSON one list page holds (decoded, about three times as much memory)."""
FIRST_PAGE = 8
"""Objects in a list's first page, before their size is known: 8 of the largest objects the
API server stores (about 1.5 MB) stay within a few PAGE_BYTES."""

_log = structlog.get_logger("jobcore.informer")


class EventHandler(Protocol):
    """Receives cache changes; called synchronously, so it must only enqueue, never block."""

    def on_add(self, obj: Object) -> None: ...

    def on_update(self, old: Object, new: Object) -> None: ...

    def on_delete(self, obj: Object) -> None: ...


def _json_size(obj: Object) -> int:
    """`obj`'s size as JSON; PAGE_BYTES for one nested deeper than Python recurses, so that
    the next page is small."""
    try:
        return len(dumps(obj))
    except RecursionError:
        return PAGE_BYTES


class _Selectors(TypedDict):
    """What narrows both the list and the watches that follow it."""

    label_selector: str | None
    field_selector: str | None


class Informer:
    """Lists then watches `resource`, keeps the objects in memory and fans changes out.

    After a watch ends it resumes from the last resourceVersion seen (bookmarks keep that
    fresh). When the server answers 410 Gone the informer lists again and diffs the list
    against its cache, so objects deleted while it was not watching are still reported as
    deletions and nothing is reported twice. Objects in the cache are shared: read, never
    modify them.

    With `keep`, an object that `keep` refuses is dropped as soon as it is decoded, before
    the transform: it is neither cached, nor indexed, nor shown to handlers, so objects the
    server selects but nobody needs do not stay in memory. An object that stops being kept
    is reported as deleted, one that starts being kept as added. With `share_parts`, each
    object is cached compacted (`jobcore._runtime.compact`): its parts are the same dicts and lists
    as equal parts of its previous version and of other cached objects. A `transform` never
    sees a watched built-in object's managedFields, which no controller reads (`strip_bulk`);
    with no transform, objects are cached as the server sends them.
    """

    def __init__(
        self,
        client: Client,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        keep: Keep | None = None,
        transform: Transform | None = strip_bulk,
        share_parts: bool = True,
        indexers: Mapping[str, IndexFunc] | None = None,
        page_size: int = 500,
        watch_timeout: int = 300,
        inactivity_timeout: float = 90.0,
        max_backoff: float = 30.0,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.selectors = _Selectors(label_selector=label_selector, field_selector=field_selector)
        self._keeps = None if keep is None else [keep]
        self._running = False
        self._transform = transform
        self._share_parts = share_parts
        self._indexers: dict[str, IndexFunc] = {
            NAMESPACE_INDEX: index_by_namespace,
            CONTROLLER_UID_INDEX: index_by_controller_uid,
            **(indexers or {}),
        }
        self._indices: dict[str, dict[str, set[ObjectKey]]] = {n: {} for n in self._indexers}
        self._store: dict[ObjectKey, Object] = {}
        self._handlers: list[EventHandler] = []
        self._resource_version: str | None = None
        self._synced = asyncio.Event()
        self._page_size = page_size
        self._watch_timeout = watch_timeout
        self._inactivity_timeout = inactivity_timeout
        self._max_backoff = max_backoff
        self._log = _log.bind(resource=resource.plural, namespace=namespace)

    # Reading -----------------------------------------------------------------------------

    def get(self, name: str, namespace: str | None = None) -> Object | None:
        return self._store.get(ObjectKey(namespace or "", name))

    def list(self, namespace: str | None = None) -> builtins.list[Object]:
        if namespace is None:
            return list(self._store.values())
        return self.by_index(NAMESPACE_INDEX, namespace)

    def by_index(self, index: str, value: str) -> builtins.list[Object]:
        """The cached objects filed under `value` in the index named `index`."""
        keys = self._indices[index].get(value, ())
        return [self._store[key] for key in keys]

    def controlled_by(self, namespace: str, uid: str) -> builtins.list[Object]:
        """The cached objects in `namespace` whose controller owner has `uid`; objects of
        other namespaces that name that uid are not its own."""
        return self.by_index(CONTROLLER_UID_INDEX, controller_key(namespace, uid))

    def __len__(self) -> int:
        return len(self._store)

    def has_synced(self) -> bool:
        """True once the first list has been loaded into the cache."""
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    @property
    def resource_version(self) -> str | None:
        """The last resourceVersion seen, from a list, a watch event or a bookmark."""
        return self._resource_version

    # Configuring -------------------------------------------------------------------------

    def add_handler(self, handler: EventHandler) -> None:
        """Register a handler; one added after the sync is first told of every cached object."""
        self._handlers.append(handler)
        if self.has_synced():
            for obj in list(self._store.values()):
                self._call(handler.on_add, obj)

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        """File the cached objects under `func`'s values too; an index's name is its own."""
        known = self._indexers.get(name)
        if known is func:
            return
        if known is not None:
            raise ValueError(f"the {self.resource.plural} informer already has an index {name!r}")
        self._indexers[name] = func
        index: dict[str, set[ObjectKey]] = {}
        self._indices[name] = index
        for key, obj in self._store.items():
            for value in func(obj):
                index.setdefault(value, set()).add(key)

    def keep_also(self, keep: Keep | None) -> None:
        """Cache the objects `keep` accepts too (None: every object), for another user of a
        shared informer; only before it runs, since objects dropped before would not return.
        """
        if self._keeps is None or keep in self._keeps:
            return
        if self._running:
            raise RuntimeError(f"the {self.resource.plural} informer runs: too late to widen it")
        if keep is None:
            self._keeps = None
        else:
            self._keeps.append(keep)

    # Running -----------------------------------------------------------------------------

    async def run(self) -> None:
        """List, then watch until cancelled; failures are retried with backoff, never raised.

        A resource that is not served yet (a CRD installed later) is retried the same way, so
        the cache syncs as soon as it exists.
        """
        self._running = True
        failures = 0
        while True:
            started: float | None = None
            asked = 0.0
            try:
                if self._resource_version is None:
                    await self._list_and_replace()
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
            except Exception as exc:  # an informer must outlive any failure
                # A watch that ran a while before it broke (a cut connection) was healthy:
                # back off from the start, not from every cut so far.
                if started is not None and time.monotonic() - started > 1.0:
                    failures = 0
                failures += 1
                self._log.warning("list/watch failed", error=str(exc), failures=failures)
                asked = asked_wait(exc)  # a pause the server asked for (429 Retry-After)
            await asyncio.sleep(max(asked, self._backoff(failures)))

    def _backoff(self, failures: int) -> float:
        delay: float = min(self._max_backoff, 0.1 * 2.0 ** min(failures, 10))
        return delay * random.uniform(0.8, 1.2)

    async def _list_and_replace(self) -> None:
        """List page by page, each page sized to about PAGE_BYTES by the last one's objects:
        a page of 500 objects of 1 MB (a tenant's ConfigMaps) would hold gigabytes decoded.
        """
        items: dict[ObjectKey, Object] = {}
        continue_token: str | None = None
        limit = min(FIRST_PAGE, self._page_size)
        while True:
            page = await self.client.list(
                self.resource,
                self.namespace,
                **self.selectors,
                limit=limit,
                continue_token=continue_token,
            )
            listed = 0
            for raw in page["items"]:
                listed += _json_size(raw)
                # List items carry no kind; give cached objects the same shape as watched ones.
                raw.setdefault("kind", self.resource.kind)
                raw.setdefault("apiVersion", self.resource.api_version)
                if self._kept(raw):
                    obj = self._cacheable(raw)
                    items[ObjectKey.of(obj)] = obj
                    await asyncio.sleep(0)  # see _watch
            continue_token = page["metadata"].get("continue")
            if not continue_token:
                break
            per_object = listed / max(1, len(page["items"]))
            limit = max(1, min(self._page_size, int(PAGE_BYTES / max(per_object, 1.0))))
            del page  # not held while the next one arrives
        self._replace(items)
        self._resource_version = page["metadata"]["resourceVersion"]
        if not self._synced.is_set():
            self._log.debug("synced", objects=len(items))
            self._synced.set()

    def _replace(self, items: dict[ObjectKey, Object]) -> None:
        """Make the cache equal `items`, reporting only what differs from what was known."""
        for key in [key for key in self._store if key not in items]:
            self._remove(key)
        for obj in items.values():
            self._upsert(obj)

    async def _watch(self) -> None:
        timeout = int(self._watch_timeout * random.uniform(1.0, 2.0))
        async for event_type, raw in self.client.watch(
            self.resource,
            self.namespace,
            resource_version=self._resource_version,
            **self.selectors,
            timeout_seconds=timeout,
            inactivity_timeout=self._inactivity_timeout,
            without_managed_fields=self._transform is not None,
        ):
            self._on_event(event_type, raw)
            # Events the stream has buffered come without a pause: a backlog of large objects
            # (a wide job's pods) must not hold the loop that probes and leases share.
            await asyncio.sleep(0)

    def _on_event(self, event_type: str, raw: Object) -> None:
        """Apply one watch event to the cache and tell the handlers."""
        if event_type != "BOOKMARK":
            if not self._kept(raw):
                self._remove(ObjectKey.of(raw))  # reported as deleted if it was kept before
            elif event_type == "DELETED":
                obj = self._transform(raw) if self._transform else raw
                self._remove(ObjectKey.of(obj), obj)
            else:
                self._upsert(self._cacheable(raw))
        self._resource_version = raw["metadata"]["resourceVersion"]

    def _kept(self, raw: Object) -> bool:
        return self._keeps is None or any(keep(raw) for keep in self._keeps)

    def _cacheable(self, raw: Object) -> Object:
        """`raw` transformed and, with `share_parts`, compacted against its cached version,
        or for a new object a cached sibling's (same controller): a wide job's Pods differ
        in little but their names, and comparing costs less than compacting anew."""
        obj = self._transform(raw) if self._transform else raw
        if not self._share_parts:
            return obj
        try:
            return compact(obj, self._store.get(ObjectKey.of(obj)) or self._sibling(obj))
        except RecursionError:  # nested deeper than Python recurses: cached as it came
            return obj

    def _sibling(self, obj: Object) -> Object | None:
        key = next(iter(index_by_controller_uid(obj)), None)
        keys = self._indices[CONTROLLER_UID_INDEX].get(key) if key else None
        return self._store[next(iter(keys))] if keys else None

    # Store -------------------------------------------------------------------------------

    def _upsert(self, obj: Object) -> None:
        key = ObjectKey.of(obj)
        old = self._store.get(key)
        if old is not None:
            if old["metadata"].get("resourceVersion") == obj["metadata"].get("resourceVersion"):
                return
            if old["metadata"].get("uid") != obj["metadata"].get("uid"):
                # Deleted and recreated while we were not watching: two events, not one.
                self._remove(key)
                old = None
            else:
                self._unindex(key, old)
        self._store[key] = obj
        self._index(key, obj)
        for handler in self._handlers:
            if old is None:
                self._call(handler.on_add, obj)
            else:
                self._call(handler.on_update, old, obj)

    def _remove(self, key: ObjectKey, final: Object | None = None) -> None:
        old = self._store.pop(key, None)
        if old is None:
            return
        self._unindex(key, old)
        for handler in self._handlers:
            self._call(handler.on_delete, final or old)

    def _index(self, key: ObjectKey, obj: Object) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                index.setdefault(value, set()).add(key)

    def _unindex(self, key: ObjectKey, obj: Object) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    def _call(self, callback: Callable[..., None], *args: Object) -> None:
        try:
            callback(*args)
        except Exception:
            self._log.exception("event handler failed")
