"""The job layer's decisions, as pure functions of a job, its last status, its pods and the clock.

What run mode a job is in (paused, resumed, debugging), which resumeSpecs hold, which pods the
plan drops or must recreate, since when its deadline counts, and what an ended job's status
recorded. What the run policy makes of a failure is `jobcore._jobs.retries`'. The reconciler
acts on what these return; they call nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jobcore._jobs.kind import Job
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import Outcome
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import ResumeSpec
from jobcore._jobs.plan import run_mode_of
from jobcore._jobs.podstate import pod_ended
from jobcore._jobs.policy import DEADLINE_EXCEEDED
from jobcore._jobs.policy import deadline_left
from jobcore._jobs.status import INVALID_SPEC
from jobcore._jobs.status import Lifecycle
from jobcore._jobs.status import PauseState
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import run_by_batch_job


def frozen_outcome(status: JobStatus) -> Outcome:
    """A finished job's outcome as its status recorded it: an ended job never runs again."""
    ended = status.condition("Failed" if status.phase == "Failed" else "Completed")
    failure = status.condition("ReplicaFailure")
    return Outcome(
        state="failed" if status.phase == "Failed" else "succeeded",
        reason=(ended.reason or "") if ended else "",
        message=(ended.message or "") if ended else "",
        replica_failure=failure.message if failure and failure.status == "True" else None,
    )


def is_invalid(status: JobStatus) -> bool:
    """Whether the status marks the spec invalid (a job that may run again once fixed)."""
    failed = status.condition("Failed")
    return failed is not None and failed.reason == INVALID_SPEC and failed.status == "True"


def is_initialized(status: JobStatus) -> bool:
    condition = status.condition("Initialized")
    return condition is not None and condition.status == "True"


def lifecycle_of(job: Job[Any], previous: JobStatus, observed: Observed) -> Lifecycle:
    """What the job's last status and spec say beyond its pods: restarts, pause, resumeSpecs."""
    resume_specs, rejected = resume_specs_of(job, previous)
    return Lifecycle(
        restarts=previous.restarts or 0,
        retried_at=previous.last_retry_time,
        retry_delay=previous.retry_delay_seconds,
        # An ended job never runs again: pausing it does nothing.
        pause=pause_state(job, previous, observed, ended=has_ended(previous)),
        rejected=rejected,
        resume_specs=resume_specs,
        held=job.held,
    )


def has_ended(status: JobStatus) -> bool:
    """Whether the job ended for good: Succeeded or Failed, but not for an invalid spec."""
    return status.finished and not is_invalid(status)


def resume_specs_of(
    job: Job[Any], previous: JobStatus
) -> tuple[list[ResumeSpec] | None, str | None]:
    """The resumeSpecs in force, and why the spec's were refused if they changed.

    The first status written records them; the spec cannot change them afterwards.
    """
    mode = job.policy.run_mode
    given = (mode.pause.resume_specs if mode and mode.pause else None) or None
    if previous.phase is None or is_invalid(previous):
        return given, None  # nothing recorded yet: an invalid spec's status records nothing
    kept = previous.resume_specs or None
    if given == kept:
        return kept, None
    shown = json.dumps([spec.to_api() for spec in kept or ()])
    return kept, (
        "spec.runMode.pause.resumeSpecs cannot change after the job is created; "
        f"the controller keeps {shown}."
    )


def pause_state(
    job: Job[Any], previous: JobStatus, observed: Observed, *, ended: bool = False
) -> PauseState | None:
    if job.paused and not ended:
        return "pausing" if observed.pods else "paused"
    return "resumed" if previous.condition("Paused") is not None else None


def other_mode_pods(desired: Sequence[Object], observed: Observed) -> set[str]:
    """Wanted pods that exist in the other run mode (debug or not): they must be recreated."""
    stale = set()
    for obj in desired:
        if obj["kind"] != PODS.kind:
            continue
        current = observed.pods.get(obj["metadata"]["name"])
        if current is not None and run_mode_of(current) != run_mode_of(obj):
            stale.add(obj["metadata"]["name"])
    return stale


def dropped_pods(desired: Sequence[Object], observed: Observed) -> list[str]:
    """Ended pods the plan no longer has, to be replaced (an elastic HorovodJob's lost worker,
    say); not those of batch Jobs, which their Job controller replaces."""
    wanted = {obj["metadata"]["name"] for obj in desired if obj["kind"] == PODS.kind}
    return sorted(
        name
        for name, pod in observed.pods.items()
        if name not in wanted
        and pod_ended(pod)
        and not pod["metadata"].get("deletionTimestamp")
        and not run_by_batch_job(pod)
    )


def ended_pods(observed: Observed) -> set[str]:
    return {name for name, pod in observed.pods.items() if pod_ended(pod)}


def debugging(outcome: Outcome, observed: Observed, desired: Sequence[Object]) -> Outcome:
    """A job in debug mode runs until debug is turned off: Running once its pods all started.

    A debug command that ends (the user's, not `sleep inf`) leaves its pod ended, not the job.
    """
    names = [o["metadata"]["name"] for o in desired if o["kind"] == PODS.kind]
    running = all(
        ((observed.pods.get(name) or {}).get("status") or {}).get("phase")
        in ("Running", "Succeeded", "Failed")
        for name in names
    )
    message = (
        "Debug mode: the pods run their debug commands; set spec.runMode.debug.enabled "
        "to false to run the job."
    )
    return Outcome(
        "running" if running else "pending", "Debugging", message, outcome.replica_failure
    )


def soonest(*delays: float | None) -> float | None:
    """The shortest of the given delays (at least 0.5 s), None if none is given."""
    known = [delay for delay in delays if delay is not None]
    return max(min(known), 0.5) if known else None


def deadline(job: Job[Any], previous: JobStatus, now: float) -> tuple[float | None, Outcome | None]:
    """Seconds left of `activeDeadlineSeconds` (None without one, or while paused), and the
    outcome of a job past it: Failed, its pods stopped."""
    policy = job.policy.run_policy
    left = None if job.paused else deadline_left(policy, running_since(job, previous), now)
    if left is None or left > 0:
        return left, None
    message = (
        f"The job did not end within runPolicy.activeDeadlineSeconds "
        f"({policy.active_deadline_seconds} s); its pods were stopped."
    )
    return left, Outcome("failed", DEADLINE_EXCEEDED, message)


def running_since(job: Job[Any], previous: JobStatus) -> str | None:
    """Since when `activeDeadlineSeconds` counts: the job's last resume, else its creation; None
    on the pass that resumes it (the count starts now). A Kubernetes Job's deadline likewise
    starts again when it is resumed."""
    paused = previous.condition("Paused")
    if paused is not None and paused.reason in ("Pausing", "Paused") and not job.paused:
        return None
    if paused is not None and paused.reason == "Resumed" and paused.last_transition_time:
        return paused.last_transition_time
    created: str | None = job.obj["metadata"].get("creationTimestamp")
    return created
