"""The job layer's decisions, as pure functions of a job, its last status, its pods and the clock.

What run mode a job is in (paused, resumed, debugging), which resumeSpecs hold, what the run
policy makes of the kind's outcome (a pending timeout, a restart, the backoff limit), and what
an ended job's status recorded. The reconciler acts on what these return; they call nothing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Literal

from jobcore._jobs.backoff import RetryBackoff
from jobcore._jobs.backoff import retry_note
from jobcore._jobs.backoff import retry_wait
from jobcore._jobs.kind import Job
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import Outcome
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import ResumeSpec
from jobcore._jobs.models import RunPolicy
from jobcore._jobs.plan import run_mode_of
from jobcore._jobs.podstate import pod_ended
from jobcore._jobs.policy import PodFailure
from jobcore._jobs.policy import pending_too_long
from jobcore._jobs.policy import pod_failures
from jobcore._jobs.policy import should_retry
from jobcore._jobs.status import INVALID_SPEC
from jobcore._jobs.status import Lifecycle
from jobcore._jobs.status import PauseState
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import run_by_batch_job

RESTARTING = "Restarting"
"""The Running condition's reason while a failed job is recreated under its backoffLimit."""


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


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """What the run policy makes of the kind's outcome.

    `restart`: "count" to record a new restart and then delete every pod, "recorded" to delete
    the pods of a restart the status already counts, None to leave the pods alone.
    `replaced`: ended pods the kind dropped, to delete and create anew after a retry's delay;
    `retried`: the lifecycle has a new retry (a counted restart, or replacements), which the
    status must record before any pod is deleted.
    """

    outcome: Outcome
    lifecycle: Lifecycle
    restart: Literal["count", "recorded"] | None = None
    replaced: tuple[str, ...] = ()
    retried: bool = False


def apply_policy(
    policy: RunPolicy,
    outcome: Outcome,
    lifecycle: Lifecycle,
    *,
    previous: JobStatus,
    pods: Mapping[str, Object],
    containers: Mapping[str, str],
    now: float,
    backoff: RetryBackoff,
) -> Verdict:
    """`pendingTimeoutSeconds`, then `backoffLimit` under `restartPolicy`.

    A retried failure tears the whole gang down (MPI cannot re-admit one rank); the pods are
    recreated after the retry's `backoff` delay, and the job stays Running meanwhile.
    """
    if not outcome.ended:
        stuck, _ = pending_too_long(policy, pods.values(), now)
        if stuck is not None:
            message = (
                f"Pod[{stuck}] was Pending for more than runPolicy.pendingTimeoutSeconds "
                f"({policy.pending_timeout_seconds} s)."
            )
            detail = outcome.replica_failure or message
            return Verdict(Outcome("failed", "PendingTimeout", message, detail), lifecycle)
    if outcome.state == "failed":
        failures = pod_failures(pods.values(), containers)
        counted = restart_recorded(previous, pods.values())
        retried = lifecycle if counted else backoff.retry(lifecycle, now)
        return _retry(policy, outcome, lifecycle, failures, retried=retried, counted=counted)
    running = previous.condition("Running")
    if outcome.state == "pending" and running is not None and running.reason == RESTARTING:
        # Still coming back from a restart: the job stays Running meanwhile.
        still = Outcome("running", RESTARTING, running.message or "", outcome.replica_failure)
        return Verdict(still, lifecycle)
    return Verdict(outcome, lifecycle)


def _retry(
    policy: RunPolicy,
    outcome: Outcome,
    lifecycle: Lifecycle,
    failures: Sequence[PodFailure],
    *,
    retried: Lifecycle,
    counted: bool,
) -> Verdict:
    """A failure: ended, past the backoff limit, or a restart (`counted` already or not), whose
    lifecycle is `retried`: with the restart's retry (see `jobcore._jobs.backoff`)."""
    if not should_retry(policy, failures) or policy.backoff_limit == 0:
        return Verdict(outcome, lifecycle)
    if lifecycle.restarts >= policy.backoff_limit and not counted:
        message = (
            f"The job failed {lifecycle.restarts + 1} times; runPolicy.backoffLimit is "
            f"{policy.backoff_limit}. {outcome.message}"
        ).strip()
        exceeded = dataclasses.replace(outcome, reason="BackoffLimitExceeded", message=message)
        return Verdict(exceeded, lifecycle)
    restarts = lifecycle.restarts + (0 if counted else 1)
    cause = f": {outcome.replica_failure}" if outcome.replica_failure else "."
    message = (
        f"Restart {restarts} of {policy.backoff_limit} {retry_note(retried)}: recreating "
        f"every pod after a failure{cause}"
    )
    restarting = Outcome("running", RESTARTING, message, outcome.replica_failure)
    return Verdict(
        restarting,
        dataclasses.replace(retried, restarts=restarts),
        restart="recorded" if counted else "count",
        retried=not counted,
    )


def replace_pods(
    verdict: Verdict, replaced: Sequence[str], *, backoff: RetryBackoff, now: float
) -> Verdict:
    """Ended pods the kind dropped from its plan (an elastic HorovodJob replacing a lost
    worker): deleted now and created again after a retry's delay, one retry for all those
    that end while it waits. A job that ended or restarts has no pods to replace."""
    if not replaced or verdict.restart is not None or verdict.outcome.ended:
        return verdict
    if retry_wait(verdict.lifecycle, now) is not None:
        return dataclasses.replace(verdict, replaced=tuple(replaced))
    lifecycle = backoff.retry(verdict.lifecycle, now)
    return dataclasses.replace(verdict, lifecycle=lifecycle, replaced=tuple(replaced), retried=True)


def noting_retry(outcome: Outcome, lifecycle: Lifecycle, now: float) -> Outcome:
    """While a retry waits, the outcome's message says when the pods come back (a restart's
    own message says so already)."""
    if outcome.reason == RESTARTING or outcome.ended or retry_wait(lifecycle, now) is None:
        return outcome
    note = f"Ended pods are created again {retry_note(lifecycle)} (retry backoff)."
    return dataclasses.replace(outcome, message=" ".join(filter(None, (outcome.message, note))))


Hold = Literal["new", "all"]
"""What a retry's wait holds back: new pods (a replacement's), or every pod (a restart's)."""


def retry_hold(previous: JobStatus, lifecycle: Lifecycle, now: float) -> Hold | None:
    """While a retry waits, no pod is created; during a restart's wait any pod there is
    from before the restart (a deletion that failed, a controller that stopped before it
    deleted them all): it goes too."""
    if retry_wait(lifecycle, now) is None:
        return None
    running = previous.condition("Running")
    return "all" if running is not None and running.reason == RESTARTING else "new"


def restart_recorded(previous: JobStatus, pods: Iterable[Object]) -> bool:
    """Whether the ended pods' restart is already in the status: it says Restarting and lists
    as ended every one of them that is not being deleted (a pass that recorded the restart,
    then could not delete them all). A pod that the restart deleted may end on its way out
    (the kubelet gives a deleted pod a final phase): its end is the restart's. Succeeded
    counts as well as Failed: a worker that stops, even with 0, before its launcher fails the
    job, as does a launcher that succeeded without reaching its workers."""
    running = previous.condition("Running")
    if running is None or running.reason != RESTARTING:
        return False
    ended = [pod for pod in pods if (pod.get("status") or {}).get("phase") in _ENDED]
    staying = {
        pod["metadata"]["uid"] for pod in ended if not pod["metadata"].get("deletionTimestamp")
    }
    recorded = {r.uid for task in previous.tasks for r in task.status if r.phase in _ENDED}
    return bool(ended) and staying <= recorded


_ENDED = ("Failed", "Succeeded")


def soonest(*delays: float | None) -> float | None:
    """The shortest of the given delays (at least 0.5 s), None if none is given."""
    known = [delay for delay in delays if delay is not None]
    return max(min(known), 0.5) if known else None


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
