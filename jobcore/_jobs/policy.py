"""The run policy's clocks and clean-up, as pure functions of a job's pods and the clock.

How long a pod may stay Pending, how much of `activeDeadlineSeconds` and
`ttlSecondsAfterFinished` is left, and which pods the clean-up policy deletes once the job has
ended. Which failures `runPolicy.restartPolicy` retries is `jobcore._jobs.retries`'.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence

from jobcore._jobs.kind import REPLICA_TYPE_LABEL
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import RunPolicy
from jobcore._jobs.status import parse_time
from jobcore._runtime.resources import Object

DEADLINE_EXCEEDED = "DeadlineExceeded"
"""The Failed reason of a job past `activeDeadlineSeconds`."""


def seconds_since(timestamp: str | None, now: float) -> float:
    """Seconds from an API timestamp (`2026-11-21T10:00:00Z`) to `now`; 0 when unknown or
    malformed."""
    moment = parse_time(timestamp)
    return 0.0 if moment is None else now - moment.timestamp()


def deadline_left(policy: RunPolicy, since: str | None, now: float) -> float | None:
    """Seconds left of `activeDeadlineSeconds`, counted from `since` (a timestamp)."""
    if policy.active_deadline_seconds is None:
        return None
    return policy.active_deadline_seconds - seconds_since(since, now)


def pending_too_long(
    policy: RunPolicy, pods: Iterable[Object], now: float
) -> tuple[str | None, float | None]:
    """The name of a pod Pending longer than `pendingTimeoutSeconds`, else None and the
    seconds until the next pod would be (None when no pod is pending)."""
    limit = policy.pending_timeout_seconds
    if limit is None:
        return None, None
    soonest: float | None = None
    for pod in pods:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp") or (pod.get("status") or {}).get("phase", "Pending") != (
            "Pending"
        ):
            continue
        left = limit - seconds_since(meta.get("creationTimestamp"), now)
        if left <= 0:
            return meta["name"], None
        soonest = left if soonest is None else min(soonest, left)
    return None, soonest


def ttl_left(policy: RunPolicy, status: JobStatus, now: float) -> float | None:
    """Seconds until a finished job is deleted under `ttlSecondsAfterFinished`."""
    if policy.ttl_seconds_after_finished is None or not status.finished:
        return None
    ended = status.condition("Completed" if status.phase == "Succeeded" else "Failed")
    ended_at = ended.last_transition_time if ended else None
    return policy.ttl_seconds_after_finished - seconds_since(ended_at, now)


def doomed_after_end(
    policy: RunPolicy, pods: Mapping[str, Object], kept_types: Sequence[str]
) -> set[str]:
    """The pods the clean-up policies delete once the job has ended.

    `cleanUpWorkers` deletes every pod but the kept types' (the launcher, for its log);
    `cleanUpPolicy` Unfinished deletes the pods still pending or running, All every pod.
    """
    doomed: set[str] = set()
    for name, pod in pods.items():
        labels = pod["metadata"].get("labels") or {}
        phase = (pod.get("status") or {}).get("phase")
        if (
            (policy.clean_up_workers and labels.get(REPLICA_TYPE_LABEL) not in kept_types)
            or policy.clean_up_policy == "All"
            or (policy.clean_up_policy == "Unfinished" and phase not in ("Succeeded", "Failed"))
        ):
            doomed.add(name)
    return doomed
