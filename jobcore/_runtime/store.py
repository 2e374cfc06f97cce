"""An indexed cache of one resource that tells handlers about every change exactly once."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable
from collections.abc import Mapping
from typing import Protocol

import structlog

from jobcore._runtime.compact import compact
from jobcore._runtime.filing import CONTROLLER_UID_INDEX
from jobcore._runtime.filing import NAMESPACE_INDEX
from jobcore._runtime.filing import IndexFunc
from jobcore._runtime.filing import Keep
from jobcore._runtime.filing import Transform
from jobcore._runtime.filing import controller_key
from jobcore._runtime.filing import index_by_controller_uid
from jobcore._runtime.filing import index_by_namespace
from jobcore._runtime.filing import strip_bulk
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore._runtime.resources import Resource

_log = structlog.get_logger("jobcore.informer")


class EventHandler(Protocol):
    """Receives cache changes; called synchronously, so it must only enqueue, never block."""

    def on_add(self, obj: Object) -> None: ...

    def on_update(self, old: Object, new: Object) -> None: ...

    def on_delete(self, obj: Object) -> None: ...


class Store:
    """The objects of one resource in memory, filed by indexes, each change told to handlers.

    Whatever fills it (a list/watch, a test) hands it watch events (`apply`) and full lists
    (`admit` each object, then `replace`); a replace reports only what differs from the
    cache, so objects deleted while nobody watched are reported as deletions and nothing is
    reported twice. Objects in the store are shared: read, never modify them.

    With `keep`, an object that `keep` refuses is dropped before the transform: it is neither
    cached, nor indexed, nor shown to handlers. An object that stops being kept is reported as
    deleted, one that starts being kept as added. With `share_parts`, each object is cached
    compacted (`jobcore._runtime.compact`): its parts are the same dicts and lists as equal
    parts of its previous version and of other cached objects. With no transform, objects are
    cached as they are handed in.
    """

    def __init__(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        keep: Keep | None = None,
        transform: Transform | None = strip_bulk,
        share_parts: bool = True,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        self._keeps = None if keep is None else [keep]
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
        self._synced = asyncio.Event()
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

    def index_values(self, index: str) -> builtins.list[str]:
        """The values the index named `index` files at least one cached object under."""
        return list(self._indices[index])

    def controlled_by(self, namespace: str, uid: str) -> builtins.list[Object]:
        """The cached objects in `namespace` whose controller owner has `uid`; objects of
        other namespaces that name that uid are not its own."""
        return self.by_index(CONTROLLER_UID_INDEX, controller_key(namespace, uid))

    def __len__(self) -> int:
        return len(self._store)

    def has_synced(self) -> bool:
        """True once the first full list has been loaded (`replace`)."""
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

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
        shared store; objects dropped before are not brought back."""
        if self.widens(keep):
            self._keeps = None if keep is None or self._keeps is None else [*self._keeps, keep]

    def widens(self, keep: Keep | None) -> bool:
        """Whether `keep_also(keep)` would cache objects this store drops now."""
        return self._keeps is not None and keep not in self._keeps

    # Filling -----------------------------------------------------------------------------

    def apply(self, event_type: str, raw: Object) -> None:
        """Apply one watch event (ADDED, MODIFIED, DELETED; a BOOKMARK changes nothing) and
        tell the handlers."""
        if event_type == "BOOKMARK":
            return
        if not self._kept(raw):
            self._remove(ObjectKey.of(raw))  # reported as deleted if it was kept before
        elif event_type == "DELETED":
            obj = self._transform(raw) if self._transform else raw
            self._remove(ObjectKey.of(obj), obj)
        else:
            self._upsert(self._cacheable(raw))

    def admit(self, raw: Object) -> Object | None:
        """`raw` as it would be cached, for a `replace`; None when `keep` refuses it."""
        return self._cacheable(raw) if self._kept(raw) else None

    def replace(self, items: Mapping[ObjectKey, Object]) -> None:
        """Make the cache equal a full list of `admit`ted objects, reporting only what differs
        from what was known; the first replace marks the store synced."""
        for key in [key for key in self._store if key not in items]:
            self._remove(key)
        for obj in items.values():
            self._upsert(obj)
        if not self._synced.is_set():
            self._log.debug("synced", objects=len(items))
            self._synced.set()

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
