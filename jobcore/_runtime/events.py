"""Record core/v1 Events about objects, counting repeats instead of duplicating them."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Literal

import structlog

from jobcore._runtime.client import Client
from jobcore._runtime.errors import AlreadyExistsError
from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.resources import EVENTS
from jobcore._runtime.resources import Object

__all__ = ["EventRecorder", "EventType"]

EventType = Literal["Normal", "Warning"]

_log = structlog.get_logger("jobcore.events")
_EventKey = tuple[str, str, str, str, str, str, str, str]
"""(apiVersion, kind, namespace, name, uid, type, reason, message) of one repeated event."""


@dataclass
class _Recorded:
    """The Event (if created yet) that counts one repeated occurrence, and its write lock."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    name: str | None = None
    count: int = 0


def _now() -> str:
    """Now as a metav1.Time: RFC 3339 in UTC with whole seconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Records Events, as `kubectl describe` shows them, for one controller (`component`).

    The first occurrence of an event creates an Event; repeats (same involved object, type,
    reason and message) raise that Event's `count` and `lastTimestamp` with a merge patch,
    as client-go's recorder does, so a reconcile loop that reports the same thing every
    pass does not flood etcd. The last `max_remembered` distinct events are remembered;
    an older one recurring starts a new Event. Recording never raises an API error: a
    failure is logged and dropped, so an event never fails a reconcile.

    `emit` records in the background, like client-go's recorder: a reconcile never waits for
    its events, and at most `max_concurrent` event writes share the API server with the
    controller's real work. With `active` (e.g. `Manager.elected.is_set`), an emitted event
    whose turn comes when `active()` is false is dropped: a process that lost its leadership
    says nothing more about the objects its successor now reconciles.
    """

    def __init__(
        self,
        client: Client,
        *,
        component: str,
        host: str | None = None,
        max_remembered: int = 4096,
        max_concurrent: int = 4,
        active: Callable[[], bool] | None = None,
    ) -> None:
        self._client = client
        self._active = active
        self._writers = asyncio.Semaphore(max_concurrent)
        self._pending: set[asyncio.Task[None]] = set()
        self._component = component
        self._host = host
        self._max_remembered = max_remembered
        self._recorded: OrderedDict[_EventKey, _Recorded] = OrderedDict()

    def emit(self, obj: Object, *, type: EventType, reason: str, message: str) -> None:
        """Record in the background; `flush` waits for what was emitted so far."""

        async def write() -> None:
            async with self._writers:
                if self._active is not None and not self._active():
                    _log.debug("event dropped: not active", reason=reason)
                    return
                try:
                    await self.record(obj, type=type, reason=reason, message=message)
                except Exception as exc:  # e.g. the client closed under a late event
                    _log.warning("recording event failed", reason=reason, error=repr(exc))

        task = asyncio.create_task(write())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def flush(self) -> None:
        """Wait until every emitted event has been written (or has failed and been logged)."""
        while self._pending:
            await asyncio.gather(*self._pending)

    async def run(self, *, flush_timeout: float = 5.0) -> None:
        """Run with a manager: on shutdown, give emitted events `flush_timeout` s to be written."""
        try:
            await asyncio.Event().wait()
        finally:
            try:
                await asyncio.wait_for(self.flush(), flush_timeout)
            except TimeoutError:
                for task in list(self._pending):
                    task.cancel()

    async def record(self, obj: Object, *, type: EventType, reason: str, message: str) -> None:
        """Record that `reason` happened to `obj`, a full object with apiVersion/kind/metadata.

        The Event goes into the object's namespace, or "default" for a cluster-scoped one.
        """
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        key: _EventKey = (
            obj.get("apiVersion", ""),
            obj.get("kind", ""),
            namespace,
            meta["name"],
            meta.get("uid", ""),
            type,
            reason,
            message,
        )
        recorded = self._remember(key)
        # Serialise writes per event, so concurrent repeats patch the one Event, not create two.
        async with recorded.lock:
            try:
                if recorded.name is not None:
                    recorded.count += 1
                    try:
                        await self._client.patch(
                            EVENTS,
                            recorded.name,
                            {"count": recorded.count, "lastTimestamp": _now()},
                            namespace,
                        )
                        return
                    except NotFoundError:
                        pass  # the Event expired (the API server's event TTL): start anew
                event = self._event(obj, namespace, type, reason, message)
                # AlreadyExistsError: a create sent again after its answer was lost; the name
                # (object and nanosecond) is this recorder's own, so the Event is the one made.
                with contextlib.suppress(AlreadyExistsError):
                    await self._client.create(EVENTS, event, namespace)
                recorded.name, recorded.count = event["metadata"]["name"], 1
            except ApiError as exc:
                _log.warning(
                    "recording event failed",
                    object=f"{namespace}/{meta['name']}",
                    kind=obj.get("kind"),
                    reason=reason,
                    error=str(exc),
                )

    def _remember(self, key: _EventKey) -> _Recorded:
        recorded = self._recorded.get(key)
        if recorded is None:
            recorded = self._recorded[key] = _Recorded()
            if len(self._recorded) > self._max_remembered:
                self._recorded.popitem(last=False)
        else:
            self._recorded.move_to_end(key)
        return recorded

    def _event(
        self, obj: Object, namespace: str, type: EventType, reason: str, message: str
    ) -> Object:
        meta = obj["metadata"]
        involved = {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "namespace": meta.get("namespace"),
            "name": meta["name"],
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        }
        now = _now()
        event: Object = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                # client-go's naming: unique per object and nanosecond, sortable by time.
                # At most 253 characters, however long the object's name is.
                "name": f"{meta['name'][:236]}.{time.time_ns():016x}",
                "namespace": namespace,
            },
            "involvedObject": {k: v for k, v in involved.items() if v},
            "type": type,
            "reason": reason,
            "message": message,
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        if self._host:
            event["source"]["host"] = event["reportingInstance"] = self._host
        return event
