"""Derive a job's T9k status (conditions, phase, tasks, aggregate) from its pods and outcome."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from typing import Literal

from jobcore._jobs.kind import Outcome
from jobcore._jobs.models import ConditionType
from jobcore._jobs.models import JobCondition
from jobcore._jobs.models import JobPhase
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import ResumeSpec
from jobcore._jobs.tasks import pod_ready
from jobcore._jobs.tasks import replica_phase
from jobcore._jobs.tasks import tasks_and_aggregate
from jobcore._runtime.resources import Object

INITIALIZED_MESSAGE = "The job has been initialized successfully."
RUNNING_MESSAGE = "All pods are running normally."
SUCCEEDED_MESSAGE = "The job has finished successfully."
FAILED_MESSAGE = "The job exited with an error code."


INVALID_SPEC = "InvalidSpec"
"""The Failed reason of a job whose spec the controller refuses; it may run once fixed."""
MAX_MESSAGE = 1_024
"""The most characters of a condition message stored; a longer one is cut and says so."""
TRUNCATED = " [truncated]"


def stamp(moment: float) -> str:
    """An API timestamp (whole seconds, rounded down) of a POSIX time."""
    return datetime.fromtimestamp(math.floor(moment), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now() -> str:
    return stamp(time.time())


def bounded(message: str) -> str:
    """`message`, cut to MAX_MESSAGE characters with TRUNCATED at the end if it is longer."""
    if len(message) <= MAX_MESSAGE:
        return message
    return message[: MAX_MESSAGE - len(TRUNCATED)] + TRUNCATED


def parse_time(timestamp: str | None) -> datetime | None:
    """An API timestamp (`2026-11-21T10:00:00Z`), in UTC when it names no zone; None when
    missing or malformed, as another writer may have stored it (the CRD types it only as a
    string)."""
    if not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class ConditionSetter:
    """Sets conditions, keeping a valid `lastTransitionTime` while a condition's status stays
    the same. Every condition the job layer writes is set here: its message is `bounded`."""

    def __init__(self, previous: Iterable[JobCondition], timestamp: str) -> None:
        self._previous = {condition.type: condition for condition in previous}
        self._timestamp = timestamp
        self.conditions: list[JobCondition] = []

    def set(self, kind: ConditionType, status: bool, reason: str, message: str) -> None:
        value: Literal["True", "False"] = "True" if status else "False"
        old = self._previous.get(kind)
        stamp = self._timestamp
        # A malformed time is replaced, so that a TTL can count from it.
        if old is not None and old.status == value and parse_time(old.last_transition_time):
            stamp = old.last_transition_time or stamp
        self.conditions.append(
            JobCondition(
                type=kind,
                status=value,
                last_transition_time=stamp,
                reason=reason,
                message=bounded(message),
            )
        )


PauseState = Literal["pausing", "paused", "resumed"]
"""Where a job that has used `spec.runMode.pause` stands: pods going, gone, or back."""


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """What the reconciler knows beyond the pods and the kind's outcome.

    `uninitialized` (reason, message) says why the job's children could not be made, e.g. a
    missing PodGroup CRD; `rejected` why a spec change was refused; `retried_at` (a timestamp)
    and `retry_delay` (seconds) the job's last retry (see `jobcore._jobs.retries`).
    """

    restarts: int = 0
    retried_at: str | None = None
    retry_delay: int | None = None
    pause: PauseState | None = None
    uninitialized: tuple[str, str] | None = None
    rejected: str | None = None
    resume_specs: list[ResumeSpec] | None = None
    held: str | None = None
    """Why the job layer holds the job's pods (see `Job.held`): said by its Paused condition."""


def derive_status(
    *,
    previous: JobStatus,
    pods: Iterable[Object],
    replica_types: Sequence[str],
    desired: Mapping[str, int],
    outcome: Outcome,
    lifecycle: Lifecycle = Lifecycle(),
    timestamp: str | None = None,
) -> JobStatus:
    """The whole status for this moment; equal to `previous` when nothing changed."""
    pods = list(pods)
    tasks, aggregate = tasks_and_aggregate(pods, replica_types, previous, lifecycle.restarts)
    ready = sum(1 for pod in pods if pod_ready(pod) and replica_phase(pod) != "Deleted")
    phase = _phase(previous, outcome, lifecycle)
    conditions = ConditionSetter(previous.conditions, timestamp or now())
    if lifecycle.uninitialized is not None:
        conditions.set("Initialized", False, *lifecycle.uninitialized)
    else:
        # Status is derived only once every rendered child exists.
        conditions.set("Initialized", True, "Initialized", INITIALIZED_MESSAGE)
    running_reason = outcome.reason or phase
    conditions.set(
        "Running",
        phase == "Running",
        running_reason,
        outcome.message or (RUNNING_MESSAGE if phase == "Running" else f"The job is {phase}."),
    )
    conditions.set(
        "ReplicaFailure",
        outcome.replica_failure is not None,
        "ErrorInPod" if outcome.replica_failure else "-",
        outcome.replica_failure or RUNNING_MESSAGE,
    )
    ended = phase in ("Succeeded", "Failed")
    end_reason = outcome.reason or ("Succeeded" if phase == "Succeeded" else "Failed")
    end_message = outcome.message or (SUCCEEDED_MESSAGE if phase == "Succeeded" else FAILED_MESSAGE)
    conditions.set(
        "Completed",
        phase == "Succeeded",
        end_reason if ended else "-",
        end_message if ended else "The job has not finished.",
    )
    conditions.set(
        "Failed",
        phase == "Failed",
        end_reason if ended else "-",
        end_message if ended else "The job has not failed.",
    )
    if lifecycle.pause is not None:
        conditions.set(
            "Paused", lifecycle.pause == "paused", *_pause_condition(previous, lifecycle)
        )
    if lifecycle.rejected is not None:
        conditions.set("SpecRejected", True, "ResumeSpecsImmutable", lifecycle.rejected)
    elif previous.condition("SpecRejected") is not None:
        conditions.set("SpecRejected", False, "Accepted", "The spec is accepted as it is.")
    return JobStatus(
        conditions=conditions.conditions,
        phase=phase,
        tasks=tasks,
        aggregate=aggregate,
        ready=f"{ready}/{sum(desired.values())}",
        restarts=lifecycle.restarts or None,
        last_retry_time=lifecycle.retried_at,
        retry_delay_seconds=lifecycle.retry_delay,
        resume_specs=lifecycle.resume_specs,
    )


_PAUSE_CONDITION = {
    "pausing": ("Pausing", "Deleting the job's pods."),
    "paused": ("Paused", "The job is paused: its pods are deleted."),
    "resumed": ("Resumed", "The job was resumed after a pause."),
}


_HELD_REASONS = {"pausing": "Stopping", "paused": "Queued"}
"""The Paused condition's reasons while the job layer holds a job for Kueue."""


def _pause_condition(previous: JobStatus, lifecycle: Lifecycle) -> tuple[str, str]:
    """The Paused condition's reason and message: a pause's, or, for a job held for Kueue,
    why, and once Kueue let it go, that it admitted the job."""
    assert lifecycle.pause is not None
    if lifecycle.held is not None and lifecycle.pause in _HELD_REASONS:
        return _HELD_REASONS[lifecycle.pause], lifecycle.held
    before = previous.condition("Paused")
    if (
        lifecycle.pause == "resumed"
        and before
        and before.reason in (*_HELD_REASONS.values(), "Admitted")
    ):
        return "Admitted", "Kueue admitted the job."
    return _PAUSE_CONDITION[lifecycle.pause]


def _phase(previous: JobStatus, outcome: Outcome, lifecycle: Lifecycle) -> JobPhase:
    """The outcome's phase, except around a pause: Paused once the pods are gone, the phase
    before while they go, and Resuming from Paused until the job runs again."""
    if lifecycle.pause == "paused":
        return "Paused"
    if lifecycle.pause == "pausing":
        return previous.phase if previous.phase in ("Pending", "Running") else "Pending"
    phase: JobPhase = _PHASES[outcome.state]
    if phase == "Pending" and previous.phase in ("Paused", "Resuming"):
        return "Resuming"
    return phase


_PHASES: dict[str, JobPhase] = {
    "pending": "Pending",
    "running": "Running",
    "succeeded": "Succeeded",
    "failed": "Failed",
}


def invalid_status(previous: JobStatus, message: str, timestamp: str | None = None) -> JobStatus:
    """The status of a job whose spec is invalid: Failed, naming the field, nothing created."""
    conditions = ConditionSetter(previous.conditions, timestamp or now())
    conditions.set("Failed", True, INVALID_SPEC, message)
    return previous.model_copy(update={"conditions": conditions.conditions, "phase": "Failed"})
