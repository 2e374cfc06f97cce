"""A job in one line, as the overview and `jobcore describe` show it: phase, age, ready of
total, restarts, retry backoff and the last message.

Every kind's stored status is read through its own `StatusPart` into the job layer's
`JobStatus`, so a kind with another status shape (Kubeflow's) is summed up the same way. A
status that cannot be read is shown as such, never raised: the job belongs to a tenant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

from pydantic import ValidationError

from jobcore import Object
from jobcore.jobs import JobKind
from jobcore.jobs import JobStatus
from jobcore.jobs import hooks_of
from jobcore.jobs import parse_time

UNREADABLE = "the stored status cannot be read: "


@dataclass(frozen=True, slots=True)
class JobSummary:
    """What the overview shows of one job."""

    namespace: str
    name: str
    kind: str
    uid: str
    created: str
    phase: str
    ready: str
    restarts: int
    retry_at: datetime | None
    message: str

    def retrying(self, now: datetime) -> str:
        """`retry in 12s` while the job waits out a retry's backoff; else empty."""
        if self.retry_at is None or self.retry_at <= now:
            return ""
        return f"retry in {math.ceil((self.retry_at - now).total_seconds())}s"


def read_status(kind: JobKind[Any], obj: Object) -> tuple[JobStatus, str | None]:
    """The job's status as the job layer reads it, and why it could not be read (then empty)."""
    stored = obj.get("status") or {}
    try:
        return hooks_of(kind).status_part.read(stored), None
    except (ValidationError, TypeError, ValueError) as error:
        return JobStatus(), UNREADABLE + str(error).splitlines()[0]


def last_message(status: JobStatus) -> str:
    """The message of the condition that changed last, the job's latest news."""
    said = [c for c in status.conditions if c.message]
    said.sort(key=lambda c: c.last_transition_time or "")
    return said[-1].message or "" if said else ""


def _ready(status: JobStatus) -> str:
    if status.ready:
        return status.ready
    counts = status.aggregate
    total = (
        counts.creating + counts.pending + counts.running + counts.succeeded + counts.failed
    ) + counts.unknown
    return f"{counts.running}/{total}" if total else "-"


def _retry_at(status: JobStatus) -> datetime | None:
    last = parse_time(status.last_retry_time)
    if last is None or not status.retry_delay_seconds:
        return None
    return last + timedelta(seconds=status.retry_delay_seconds)


def summarize(kind: JobKind[Any], obj: Object) -> JobSummary:
    meta = obj["metadata"]
    status, unreadable = read_status(kind, obj)
    return JobSummary(
        namespace=meta.get("namespace") or "",
        name=meta["name"],
        kind=kind.resource.kind,
        uid=meta.get("uid") or "",
        created=meta.get("creationTimestamp") or "",
        phase=status.phase or ("Unknown" if unreadable else "Pending"),
        ready=_ready(status),
        restarts=sum(task.restart_count for task in status.tasks),
        retry_at=_retry_at(status),
        message=unreadable or last_message(status),
    )


def age(timestamp: str, now: datetime | None = None) -> str:
    """`kubectl get`'s age: 45s, 12m, 3h, 2d; `-` for no time."""
    moment = parse_time(timestamp)
    if moment is None:
        return "-"
    seconds = max(0, int(((now or datetime.now(UTC)) - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
