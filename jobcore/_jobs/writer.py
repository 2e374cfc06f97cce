"""Writing a kind's job statuses: each change once, never over a newer status, gangs coalesced.

The reconciler derives a status on every pass; this writes it only when it changed, through
the status subresource with the resourceVersion it was derived from, and remembers the write
until the job cache shows it (a cache that lags our own write must not look like news).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

import structlog
from pydantic import ValidationError

from jobcore._jobs import readback
from jobcore._jobs.models import JobStatus
from jobcore._jobs.statuspart import T9K_STATUS
from jobcore._jobs.statuspart import StatusPart
from jobcore._runtime.client import Client
from jobcore._runtime.errors import ConflictError
from jobcore._runtime.informer import Informer
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore._runtime.resources import Resource

_log = structlog.get_logger("jobcore.jobs")

CONFLICT_RETRY_SECONDS = 0.5
"""When to derive a job's status again after another writer changed the job under a write."""
Announce = Callable[[Object, JobStatus, JobStatus], None]
"""Called with the job, its previous status and the status just written."""


@dataclasses.dataclass(eq=False)
class StatusWriter:
    """Writes the statuses of one kind's jobs in the shape of its `part`, announcing each
    write through `announce`."""

    client: Client
    resource: Resource
    jobs: Informer
    announce: Announce
    _: dataclasses.KW_ONLY
    part: StatusPart = T9K_STATUS
    interval: float = 1.0
    clock: Callable[[], float] = time.time
    _written: dict[ObjectKey, _Written] = dataclasses.field(default_factory=dict, init=False)
    """The last status written per job, until the cache shows that write."""
    _read: dict[ObjectKey, str] = dataclasses.field(default_factory=dict, init=False)
    """The resourceVersion of the status `latest` last gave per job: the next write's basis."""

    def __post_init__(self) -> None:
        self.jobs.add_handler(_WriteObserver(self._written))

    def latest(self, obj: Object) -> JobStatus:
        """The job's status: what we last wrote, until the cache shows that write.

        Deriving from a cache that lags our own write would restamp conditions; once the
        cache has caught up it is the truth again, other writers' changes included.
        """
        key = ObjectKey.of(obj)
        written = self._unseen_write(obj)
        if written is not None and written.status is not None:
            self._read[key] = written.version
            return written.status
        # The cache's object, newer than `obj` when a write earlier in this pass has shown.
        current = self.jobs.get(key.name, key.namespace)
        if current is None or current["metadata"].get("uid") != obj["metadata"].get("uid"):
            current = obj
        self._read[key] = str(current["metadata"]["resourceVersion"])
        return read_status(current, self.part, now=self.clock())

    async def write(
        self, obj: Object, previous: JobStatus, status: JobStatus, *, coalesce: bool = True
    ) -> float | None:
        """Patch the status if it changed, on top of the version `latest` read; seconds until
        a write held back (or refused, as another writer changed the job) is due, if one is.

        A change of phase, of the conditions' statuses or reasons, or of any other field is
        written at once. A change only in the pods' progress (the part's `progress` fields:
        T9k's tasks, aggregate and ready) and in conditions' messages (such as "Waiting for
        3 of 8 worker(s)") waits until `interval` has passed since the job's last write: a
        gang of pods starting together then costs one write, not one per pod event. Without
        `coalesce` it is written at once too.
        """
        meta = obj["metadata"]
        new, old = self.part.write(status, obj), self.part.write(previous, obj)
        if new == old:
            return None
        key = ObjectKey.of(obj)
        quiet = progress_only(new, old, self.part.progress)
        if coalesce and quiet and (last := self._written.get(key)) is not None:
            wait = last.at + self.interval - self.clock()
            if wait > 0:
                return wait
        # The resourceVersion the status was derived from: the API server refuses the write
        # (409) if another writer changed the job since, rather than let it be overwritten.
        basis = {"resourceVersion": self._read.get(key) or meta["resourceVersion"]}
        try:
            written = await self.client.patch(
                self.resource,
                meta["name"],
                {"metadata": basis, "status": new},
                meta["namespace"],
                subresource="status",
            )
        except ConflictError:
            # Derive again from the newer status, once the cache shows it.
            _log.debug("status changed by another writer", job=meta["name"])
            self.forget(key)
            return CONFLICT_RETRY_SECONDS
        version = written["metadata"]["resourceVersion"]
        self._read[key] = version
        # The watch may have delivered this very write while the patch was answered.
        cached = self.jobs.get(meta["name"], meta["namespace"])
        seen = cached is not None and cached["metadata"].get("resourceVersion") == version
        self._written[key] = _Written(meta["uid"], version, self.clock(), None if seen else status)
        self.announce(obj, previous, status)
        return None

    def forget(self, key: ObjectKey) -> None:
        self._written.pop(key, None)
        self._read.pop(key, None)

    def _unseen_write(self, obj: Object) -> _Written | None:
        """This process's last status write to the job, while the cache does not show it."""
        written = self._written.get(ObjectKey.of(obj))
        if written is None or written.status is None or written.uid != obj["metadata"]["uid"]:
            return None
        return written


@dataclasses.dataclass(slots=True)
class _Written:
    """This process's last status write to a job: when, and the status while the cache lags it.

    Once the cache shows the write, the status is dropped: the cache is the truth again, and
    a thousand ended jobs need not keep theirs twice.
    """

    uid: str
    version: str
    at: float
    status: JobStatus | None


class _WriteObserver:
    """Marks a written status as seen once the job cache shows its resourceVersion.

    From then on the reconciler reads the cache again, so a change by another writer is seen
    (and corrected) rather than hidden behind this process's own last write.
    """

    def __init__(self, written: Mapping[ObjectKey, _Written]) -> None:
        self._written = written

    def _seen(self, obj: Object) -> None:
        written = self._written.get(ObjectKey.of(obj))
        if written is not None and written.version == obj["metadata"].get("resourceVersion"):
            written.status = None

    def on_add(self, obj: Object) -> None:
        self._seen(obj)

    def on_update(self, old: Object, new: Object) -> None:
        self._seen(new)

    def on_delete(self, obj: Object) -> None:
        pass


def progress_only(
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    progress: frozenset[str] = T9K_STATUS.progress,
) -> bool:
    """Whether two stored statuses differ only in the pods' progress: the `progress` fields,
    and condition messages (such as "Waiting for 3 of 8 worker(s)"), not any other field nor
    any condition's status or reason."""
    others = (new.keys() | old.keys()) - progress - {"conditions"}
    if any(new.get(key) != old.get(key) for key in others):
        return False
    return _unworded(new.get("conditions")) == _unworded(old.get("conditions"))


def _unworded(conditions: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Conditions without their messages."""
    return [{k: v for k, v in c.items() if k != "message"} for c in conditions or ()]


def read_status(obj: Object, part: StatusPart = T9K_STATUS, *, now: float) -> JobStatus:
    """The job's stored status, its values bounded as at `now` (`readback.bounded`); an
    unreadable one (another writer's) as no status at all."""
    try:
        status = part.read(obj.get("status") or {})
    except ValidationError:
        _log.warning("unreadable job status, starting afresh", job=obj["metadata"]["name"])
        return JobStatus()
    return readback.bounded(status, created=obj["metadata"].get("creationTimestamp"), now=now)
