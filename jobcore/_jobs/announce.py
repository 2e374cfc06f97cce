"""What the job layer tells users and dashboards: Events on a job, and the job counters.

Each announcement follows from a status that was written (a transition judged from the stored
status, so a retried write never announces twice) or from an act of the reconciler (a pod made
in a running job, a child the API server forbade, a restart, a TTL deletion).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence

from jobcore._jobs import metrics
from jobcore._jobs.decide import is_initialized
from jobcore._jobs.decide import is_invalid
from jobcore._jobs.models import ConditionType
from jobcore._jobs.models import JobStatus
from jobcore._jobs.retries import RESTARTING
from jobcore._jobs.retries import Verdict
from jobcore._jobs.retries import retry_note
from jobcore._jobs.status import bounded
from jobcore._runtime.events import EventRecorder
from jobcore._runtime.resources import Object

REPLACING = "Replacing"
"""The Warning Event's reason when ended pods are replaced after a retry's delay."""
FAILED_CREATE = "FailedCreate"
"""The reason (of an Event, and of the Initialized condition) when the API server forbids a
child: a ResourceQuota, a LimitRange or admission turned it down."""

_WARNINGS: tuple[tuple[ConditionType, str, str], ...] = (
    ("Initialized", "PodGroupUnavailable", "False"),
    ("SpecRejected", "ResumeSpecsImmutable", "True"),
)
"""Conditions that ask for attention: (type, reason, status)."""


class Announcer:
    """Records a kind's job Events through `recorder` and counts its jobs in the metrics."""

    def __init__(
        self,
        recorder: EventRecorder,
        kind: str,
        *,
        also: Callable[[EventRecorder, Object, JobStatus, JobStatus], None] | None = None,
    ) -> None:
        self.recorder = recorder
        self.kind = kind
        self.also = also

    def transitions(self, obj: Object, previous: JobStatus, status: JobStatus) -> None:
        """Events and job counters for each transition from `previous` to the written `status`,
        and then whatever the kind's own `also` announces through the same recorder (its own
        Events and metrics, say)."""
        self._transitions(obj, previous, status)
        if self.also is not None:
            self.also(self.recorder, obj, previous, status)

    def _transitions(self, obj: Object, previous: JobStatus, status: JobStatus) -> None:
        labels = (self.kind, obj["metadata"].get("namespace") or "")
        if is_initialized(status) and not is_initialized(previous):
            metrics.jobs_created_total.labels(*labels).inc()
            self._normal(obj, "Initialized", "Created the job's resources.")
        self._warnings(obj, previous, status)
        if status.phase == previous.phase:
            return
        failed = status.condition("Failed")
        if status.phase == "Failed" and failed is not None:
            if not is_invalid(status):
                metrics.jobs_failed_total.labels(*labels).inc()
            replica = status.condition("ReplicaFailure")
            detail = replica.message if replica and replica.status == "True" else None
            message = "; ".join(m for m in (failed.message, detail) if m)
            self.recorder.emit(
                obj, type="Warning", reason=failed.reason or "Failed", message=message
            )
        elif status.phase == "Succeeded":
            metrics.jobs_succeeded_total.labels(*labels).inc()
            self._normal(obj, "Succeeded", "The job has finished successfully.")
        elif status.phase == "Running":
            self._normal(obj, "Running", "All pods are running.")
        elif status.phase in ("Paused", "Resuming"):
            self._normal(obj, status.phase, f"The job is {status.phase}.")

    def pods(self, obj: Object, reason: str, verb: str, names: Sequence[str]) -> None:
        """A Normal Event per Pod of a running job that was created or deleted."""
        for name in names:
            self._normal(obj, reason, f"{verb} pod {name}")

    def refused(self, obj: Object, cause: str) -> None:
        """The API server forbade a child: `cause` names it and quotes the server."""
        self.recorder.emit(
            obj, type="Warning", reason=FAILED_CREATE, message=f"Error creating {cause}"
        )

    def retried(self, obj: Object, verdict: Verdict) -> None:
        """A retry was recorded: a Warning saying when the pods come back. A restart's is the
        Running condition's message (which restart, when, after what failure), and counts."""
        if verdict.restart == "count":
            namespace = obj["metadata"].get("namespace") or ""
            metrics.jobs_restarted_total.labels(self.kind, namespace).inc()
            message, reason = verdict.outcome.message, RESTARTING
        else:
            names = ", ".join(verdict.replaced)
            when = retry_note(verdict.lifecycle)
            message, reason = f"Replacing ended pod(s) {names}: created again {when}.", REPLACING
        self.recorder.emit(obj, type="Warning", reason=reason, message=bounded(message))

    def expired(self, obj: Object, seconds: int | None) -> None:
        self._normal(obj, "TTLExpired", f"Deleting the job {seconds} s after it ended.")

    def _normal(self, obj: Object, reason: str, message: str) -> None:
        self.recorder.emit(obj, type="Normal", reason=reason, message=message)

    def _warnings(self, obj: Object, previous: JobStatus, status: JobStatus) -> None:
        """A Warning for each condition that newly asks for attention, with its message."""
        for kind, reason, value in _WARNINGS:
            new, old = status.condition(kind), previous.condition(kind)
            if new is None or new.reason != reason or new.status != value:
                continue
            if old is not None and (old.reason, old.status) == (new.reason, new.status):
                continue
            self.recorder.emit(obj, type="Warning", reason=reason, message=new.message or reason)
