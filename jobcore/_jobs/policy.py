"""The run policy's rules, as pure functions of a job's pods and the clock.

Which failures `runPolicy.restartPolicy` retries, how long a pod may stay Pending, how much
of `activeDeadlineSeconds` and `ttlSecondsAfterFinished` is left, and which pods the
clean-up policy deletes once the job has ended.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass

from jobcore._jobs.kind import REPLICA_TYPE_LABEL
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import RunPolicy
from jobcore._jobs.status import parse_time
from jobcore._runtime.resources import Object

LOST_POD_REASONS = frozenset(
    {"Evicted", "NodeLost", "Shutdown", "NodeShutdown", "Terminated", "UnexpectedAdmissionError"}
)
"""Pod status reasons that say the node, not the program, ended the pod: always retryable."""
DEADLINE_EXCEEDED = "DeadlineExceeded"
"""The Failed reason of a job past `activeDeadlineSeconds`."""


def seconds_since(timestamp: str | None, now: float) -> float:
    """Seconds from an API timestamp (`2026-11-21T10:00:00Z`) to `now`; 0 when unknown or
    malformed."""
    moment = parse_time(timestamp)
    return 0.0 if moment is None else now - moment.timestamp()


@dataclass(frozen=True, slots=True)
class PodFailure:
    """A failed pod: its main container's exit code, the pod's reason, and when it ended."""

    pod: str
    exit_code: int | None
    reason: str | None
    finished_at: str

    @property
    def retryable_by_exit_code(self) -> bool:
        """Signals (128+, so 137 and 143) and lost pods may pass; exit codes 1-127 will not."""
        if self.reason in LOST_POD_REASONS or self.exit_code is None:
            return True
        return self.exit_code >= 128


def pod_failures(pods: Iterable[Object], containers: Mapping[str, str]) -> list[PodFailure]:
    """The failed pods among `pods`, read from each replica type's main container."""
    found = []
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") != "Failed":
            continue
        replica_type = (pod["metadata"].get("labels") or {}).get(REPLICA_TYPE_LABEL, "")
        main = containers.get(replica_type)
        exits = [
            (s.get("name"), s["state"]["terminated"])
            for s in status.get("containerStatuses") or ()
            if "terminated" in (s.get("state") or {})
        ]
        # The main container's exit, unless another container failed where it did not.
        own = next((t for n, t in exits if n == main), None)
        other = next((t for _, t in exits if t.get("exitCode")), None)
        chosen = own if own and own.get("exitCode") else other or own
        found.append(
            PodFailure(
                pod=pod["metadata"]["name"],
                exit_code=chosen.get("exitCode") if chosen else None,
                reason=status.get("reason"),
                finished_at=(chosen or {}).get("finishedAt") or "",
            )
        )
    return found


def should_retry(policy: RunPolicy, failures: Sequence[PodFailure]) -> bool:
    """Whether `restartPolicy` retries this failure; the first pod to fail decides.

    In a gang the first failure is the cause; the others (a launcher that lost a rank) follow.
    A job that failed with no failed pod (a worker that exited 0 too soon) is retried only
    under OnFailure.
    """
    if policy.restart_policy == "Never":
        return False
    if policy.restart_policy == "OnFailure":
        return True
    if not failures:
        return False
    # A pod lost before any container ended has no time: it cannot claim to be first.
    decisive = [f for f in failures if f.finished_at] or list(failures)
    first = min(f.finished_at for f in decisive)
    return any(f.retryable_by_exit_code for f in decisive if f.finished_at == first)


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
