"""Retries: what a failure means under the run policy, when the pods come back, and how it is said.

A restart (the whole job recreated under `backoffLimit`) and a replacement (an ended pod that
the kind drops to create anew, as an elastic HorovodJob does) are retries. As a Kubernetes Job
does, the controller waits before each: `initial` seconds after the first, twice as long after
each retry in a row, at most `maximum`; once the job ran `maximum` seconds since its pods came
back, the next retry waits `initial` again. The status records the last retry (its time and
delay: `lastRetryTime`, `retryDelaySeconds`), so a restarted controller keeps to it.

Pure functions of a job's lifecycle, its last status, its pods and the clock: the reconciler
holds back pods while a retry waits (`retry_hold`), then has the outcome judged (`judge`),
whose verdict says what the status writes and when the pods may come back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Literal

from jobcore._jobs.kind import REPLICA_TYPE_LABEL
from jobcore._jobs.kind import Outcome
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import RunPolicy
from jobcore._jobs.podstate import pod_ended
from jobcore._jobs.policy import pending_too_long
from jobcore._jobs.readback import MAX_RETRY_DELAY_SECONDS
from jobcore._jobs.status import Lifecycle
from jobcore._jobs.status import parse_time
from jobcore._jobs.status import stamp
from jobcore._runtime.resources import Object

RESTARTING = "Restarting"
"""The Running condition's reason while a failed job is recreated under its backoffLimit."""
INITIAL_SECONDS = 10
"""The first retry's delay, as a Kubernetes Job's."""
MAXIMUM_SECONDS = 360
"""The longest delay, as a Kubernetes Job's (6 minutes)."""


# Which failures are retried -----------------------------------------------------------------

LOST_POD_REASONS = frozenset(
    {"Evicted", "NodeLost", "Shutdown", "NodeShutdown", "Terminated", "UnexpectedAdmissionError"}
)
"""Pod status reasons that say the node, not the program, ended the pod: always retryable."""


@dataclasses.dataclass(frozen=True, slots=True)
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


def failed_pods(pods: Iterable[Object], containers: Mapping[str, str]) -> list[PodFailure]:
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


# The backoff --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class RetryBackoff:
    """The delays between a job's retries, in whole seconds: `initial`, doubling, `maximum`."""

    initial: int = INITIAL_SECONDS
    maximum: int = MAXIMUM_SECONDS

    def __post_init__(self) -> None:
        if not 1 <= self.initial <= self.maximum <= MAX_RETRY_DELAY_SECONDS:
            raise ValueError(
                f"a retry backoff needs 1 <= initial <= maximum <= {MAX_RETRY_DELAY_SECONDS} "
                f"seconds, got {self.initial} and {self.maximum}"
            )

    def delay(self, lifecycle: Lifecycle, now: float) -> int:
        """The delay of a retry at `now`, after the job's last one (if any)."""
        due = retry_due(lifecycle)
        if due is None or lifecycle.retry_delay is None or now - due >= self.maximum:
            return self.initial
        return min(lifecycle.retry_delay * 2, self.maximum)

    def retry(self, lifecycle: Lifecycle, now: float) -> Lifecycle:
        """`lifecycle` with a retry at `now` recorded: the status written from it keeps it."""
        return dataclasses.replace(
            lifecycle, retried_at=stamp(now), retry_delay=self.delay(lifecycle, now)
        )


RETRY_BACKOFF = RetryBackoff()
"""The default: 10 s, doubling, at most 6 minutes, as a Kubernetes Job's."""


def retry_due(lifecycle: Lifecycle) -> float | None:
    """When the last retry lets the pods be created again (a POSIX time), if one was made."""
    moment = parse_time(lifecycle.retried_at)
    if moment is None or lifecycle.retry_delay is None:
        return None
    return moment.timestamp() + lifecycle.retry_delay


def retry_wait(lifecycle: Lifecycle, now: float) -> float | None:
    """Seconds until the job may create pods again after its last retry; None if it may now."""
    due = retry_due(lifecycle)
    return None if due is None or due <= now else due - now


def retry_note(lifecycle: Lifecycle) -> str:
    """When the pods are created again, for a message: `in 20 s, at 2026-11-21T10:00:20Z`."""
    due = retry_due(lifecycle)
    return "" if due is None else f"in {lifecycle.retry_delay} s, at {stamp(due)}"


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """What the run policy makes of the kind's outcome.

    `restart`: "count" to record a new restart and then delete every pod, "recorded" to delete
    the pods of a restart the status already counts, None to leave the pods alone.
    `replaced`: ended pods the kind dropped, to delete and create anew after a retry's delay;
    `retried`: the lifecycle has a new retry (a counted restart, or replacements), which the
    status must record before any pod is deleted; `wait`: seconds until the pods may be
    created again after the last retry, None if they may now.
    """

    outcome: Outcome
    lifecycle: Lifecycle
    restart: Literal["count", "recorded"] | None = None
    replaced: tuple[str, ...] = ()
    retried: bool = False
    wait: float | None = None


def judge(
    outcome: Outcome,
    lifecycle: Lifecycle,
    *,
    policy: RunPolicy | None,
    previous: JobStatus,
    pods: Mapping[str, Object],
    containers: Mapping[str, str],
    replaced: Sequence[str],
    backoff: RetryBackoff,
    now: float,
) -> Verdict:
    """The run policy's verdict on the outcome (none where `policy` is None: in debug mode,
    or for a paused job): `pendingTimeoutSeconds`, then `backoffLimit` under `restartPolicy`;
    then the ended pods the kind dropped, to replace (`replace_pods`). Its outcome says when
    a waiting retry brings the pods back.

    A retried failure tears the whole gang down (MPI cannot re-admit one rank); the pods are
    recreated after the retry's `backoff` delay, and the job stays Running meanwhile.
    """
    verdict = Verdict(outcome, lifecycle)
    if policy is not None:
        stuck = None if outcome.ended else pending_too_long(policy, pods.values(), now)[0]
        running = previous.condition("Running")
        if stuck is not None:
            message = (
                f"Pod[{stuck}] was Pending for more than runPolicy.pendingTimeoutSeconds "
                f"({policy.pending_timeout_seconds} s)."
            )
            detail = outcome.replica_failure or message
            verdict = Verdict(Outcome("failed", "PendingTimeout", message, detail), lifecycle)
        elif outcome.state == "failed":
            failures = failed_pods(pods.values(), containers)
            counted = restart_recorded(previous, pods.values())
            retried = lifecycle if counted else backoff.retry(lifecycle, now)
            verdict = _retry(policy, outcome, lifecycle, failures, retried=retried, counted=counted)
        elif outcome.state == "pending" and running is not None and running.reason == RESTARTING:
            # Still coming back from a restart: the job stays Running meanwhile.
            still = Outcome("running", RESTARTING, running.message or "", outcome.replica_failure)
            verdict = Verdict(still, lifecycle)
    verdict = replace_pods(verdict, replaced, backoff=backoff, now=now)
    return dataclasses.replace(
        verdict,
        outcome=noting_retry(verdict.outcome, verdict.lifecycle, now),
        wait=retry_wait(verdict.lifecycle, now),
    )


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
    lifecycle is `retried`: with the restart's retry (above)."""
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
    ended = [pod for pod in pods if pod_ended(pod)]
    staying = {
        pod["metadata"]["uid"] for pod in ended if not pod["metadata"].get("deletionTimestamp")
    }
    recorded = {
        r.uid for task in previous.tasks for r in task.status if r.phase in ("Failed", "Succeeded")
    }
    return bool(ended) and staying <= recorded
