"""Remember the children a controller created or deleted until its cache has seen them.

A reconcile reads children from an informer cache, which lags behind the controller's own
writes: right after creating a Pod, the next reconcile may not see it yet and create it again.
Like Kubernetes' ControllerExpectations, the controller records what it is about to do and
skips (or subtracts) those children until the cache confirms them. The expectations here are
name-based, as in the UID-tracking variant, so a confirmation is tied to one child and a
duplicate event cannot satisfy another child's expectation. Expectations expire after `ttl`,
so a lost watch event delays a reconcile but never blocks it for good.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field

import structlog

__all__ = ["Expectations"]

_log = structlog.get_logger("jobcore.expectations")


@dataclass
class _Pending:
    set_at: float
    creations: set[str] = field(default_factory=set)
    deletions: set[str] = field(default_factory=set)


class Expectations:
    """Pending creations and deletions of children, per owner key (e.g. an `ObjectKey`).

    Call `expect_creations` before creating children, `creation_observed` when the cache
    reports one (and also when a create call fails, since that child will never be
    reported), and reconcile only when `satisfied`. Synchronous and not thread-safe: use it
    from the event loop that runs the informer handlers and the reconciles.
    """

    def __init__(self, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._pending: dict[Hashable, _Pending] = {}

    def expect_creations(self, owner_key: Hashable, names: Iterable[str]) -> None:
        """Record that the children `names` are about to be created; restarts the ttl."""
        pending = self._expect(owner_key)
        pending.creations.update(names)
        self._drop_if_done(owner_key, pending)

    def expect_deletions(self, owner_key: Hashable, names: Iterable[str]) -> None:
        """Record that the children `names` are about to be deleted; restarts the ttl."""
        pending = self._expect(owner_key)
        pending.deletions.update(names)
        self._drop_if_done(owner_key, pending)

    def creation_observed(self, owner_key: Hashable, name: str) -> None:
        """The cache has the child `name` (or creating it failed): stop waiting for it."""
        pending = self._pending.get(owner_key)
        if pending is not None:
            pending.creations.discard(name)
            self._drop_if_done(owner_key, pending)

    def deletion_observed(self, owner_key: Hashable, name: str) -> None:
        """The cache no longer has the child `name` (or deleting it failed): stop waiting."""
        pending = self._pending.get(owner_key)
        if pending is not None:
            pending.deletions.discard(name)
            self._drop_if_done(owner_key, pending)

    def satisfied(self, owner_key: Hashable) -> bool:
        """Whether the cache has caught up: nothing is pending, or the expectations expired."""
        return self._live(owner_key) is None

    def pending_creations(self, owner_key: Hashable) -> frozenset[str]:
        """Children being created that the cache does not show yet: do not create them again."""
        pending = self._live(owner_key)
        return frozenset(pending.creations) if pending else frozenset()

    def pending_deletions(self, owner_key: Hashable) -> frozenset[str]:
        """Children being deleted that the cache still shows."""
        pending = self._live(owner_key)
        return frozenset(pending.deletions) if pending else frozenset()

    def forget(self, owner_key: Hashable) -> None:
        """Drop all expectations of `owner_key`, e.g. once the owner is deleted."""
        self._pending.pop(owner_key, None)

    def _expect(self, owner_key: Hashable) -> _Pending:
        pending = self._pending.get(owner_key)
        now = self._clock()
        if pending is None:
            pending = self._pending[owner_key] = _Pending(set_at=now)
        pending.set_at = now
        return pending

    def _drop_if_done(self, owner_key: Hashable, pending: _Pending) -> None:
        if not pending.creations and not pending.deletions:
            del self._pending[owner_key]

    def _live(self, owner_key: Hashable) -> _Pending | None:
        """The unexpired expectations of `owner_key`; expired ones are dropped and logged."""
        pending = self._pending.get(owner_key)
        if pending is None:
            return None
        if self._clock() - pending.set_at >= self._ttl:
            del self._pending[owner_key]
            _log.warning(
                "expectations expired before the cache confirmed them",
                owner=str(owner_key),
                creations=sorted(pending.creations),
                deletions=sorted(pending.deletions),
                ttl=self._ttl,
            )
            return None
        return pending
