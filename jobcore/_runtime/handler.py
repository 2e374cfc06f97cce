"""Event handlers: turn cache events into reconcile requests on a controller's queue."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from typing import TYPE_CHECKING

from jobcore._runtime.predicate import Predicate
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore._runtime.resources import Resource
from jobcore._runtime.resources import controller_of

if TYPE_CHECKING:
    from jobcore._runtime.workqueue import WorkQueue

Request = ObjectKey
"""What a reconciler is asked to reconcile: the namespace and name of one primary object."""

Mapper = Callable[[Object], Iterable[Request]]
"""Maps a changed object to the requests it should trigger."""


def request_for_object(obj: Object) -> Iterable[Request]:
    """The object itself: the mapping used when watching the primary kind."""
    return (ObjectKey.of(obj),)


def requests_for_owner(owner: Resource) -> Mapper:
    """Map an owned object to its controller owner when that owner is of `owner`'s kind."""

    def mapper(obj: Object) -> Iterable[Request]:
        ref = controller_of(obj)
        if ref is None or ref.get("kind") != owner.kind:
            return ()
        group = ref.get("apiVersion", "").rpartition("/")[0]
        if group != owner.group:
            return ()
        namespace = (obj["metadata"].get("namespace") or "") if owner.namespaced else ""
        return (ObjectKey(namespace, ref["name"]),)

    return mapper


class EnqueueRequests:
    """An informer event handler that enqueues the mapped requests events that pass predicates.

    An update enqueues the requests of both the old and the new object, so an object that
    moved to another owner wakes both. With a `delay`, a request is enqueued that much later,
    and events for a request already waiting add nothing: a burst of events (a gang of pods
    starting) costs one reconcile, at most `delay` after its first event. Deletions, and
    objects for which `urgent` is true, are enqueued at once: a state that may not last
    (a pod that failed and is about to go) must not wait.
    """

    def __init__(
        self,
        queue: WorkQueue[Request],
        mapper: Mapper,
        predicates: Sequence[Predicate] = (),
        delay: float = 0.0,
        urgent: Callable[[Object], bool] | None = None,
    ) -> None:
        self._queue = queue
        self._mapper = mapper
        self._predicates = tuple(predicates)
        self._delay = delay
        self._urgent = urgent

    def on_add(self, obj: Object) -> None:
        if all(p.create(obj) for p in self._predicates):
            self._enqueue(self._mapper(obj), self._is_urgent(obj))

    def on_update(self, old: Object, new: Object) -> None:
        if all(p.update(old, new) for p in self._predicates):
            self._enqueue({*self._mapper(old), *self._mapper(new)}, self._is_urgent(new))

    def on_delete(self, obj: Object) -> None:
        if all(p.delete(obj) for p in self._predicates):
            self._enqueue(self._mapper(obj), urgent=True)

    def _is_urgent(self, obj: Object) -> bool:
        return self._urgent is not None and self._urgent(obj)

    def _enqueue(self, requests: Iterable[Request], urgent: bool) -> None:
        for request in requests:
            if not self._delay or urgent:
                self._queue.add(request)
            elif not self._queue.waiting(request):  # a waiting reconcile sees this event too
                self._queue.add_after(request, self._delay)
