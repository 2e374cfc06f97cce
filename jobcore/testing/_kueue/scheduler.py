"""The stand-in's scheduler: admits each ClusterQueue's pending Workloads in order.

In order of priority, then queue time; into the first flavour that fits, partially when a
pod set allows it, or after preempting lower-priority Workloads of the same ClusterQueue.

It follows pkg/scheduler (scheduler.go's getInitialAssignments, admit and requeueAndUpdate)
and pkg/scheduler/preemption (classical preemption within a ClusterQueue).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from jobcore._runtime.client import Client
from jobcore._runtime.controller import Result
from jobcore._runtime.errors import ConflictError
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.handler import Request
from jobcore._runtime.resources import Object
from jobcore.testing._kueue import api
from jobcore.testing._kueue import quota
from jobcore.testing._kueue import transitions
from jobcore.testing._kueue.cluster import Assumed
from jobcore.testing._kueue.cluster import Snapshot
from jobcore.testing._kueue.cluster import editable
from jobcore.testing._kueue.cluster import holds_quota
from jobcore.testing._kueue.cluster import required_checks
from jobcore.testing._kueue.cluster import write_status

Groups = list[tuple[tuple[str, ...], list[quota.Flavor]]]

SCHEDULE = Request("", "schedule")
"""The one request the scheduler's controller reconciles: a pass over every ClusterQueue."""


@dataclass(frozen=True, slots=True)
class _QueueState:
    """One ClusterQueue during a pass: its resource groups, the usage and the Workloads it has
    admitted (both grow as the pass admits more), and its preemption policy within itself."""

    groups: Groups
    used: quota.Usage
    admitted: list[Object]
    policy: str


@dataclass(frozen=True, slots=True)
class _Decision:
    admission: quota.Assignment | None = None
    targets: tuple[Object, ...] = ()
    message: str = ""


def admissible(workload: Object) -> bool:
    """workload.IsAdmissible, and not held back by a requeue: active, not finished, without
    a reservation, its Requeued condition not False."""
    requeued = api.find(api.conditions(workload), api.REQUEUED)
    return (
        api.is_active(workload)
        and not api.is_true(workload, api.FINISHED)
        and not api.is_true(workload, api.QUOTA_RESERVED)
        and not (requeued is not None and requeued.get("status") == "False")
        and not workload["metadata"].get("deletionTimestamp")
    )


def queue_time(workload: Object) -> str:
    """GetQueueOrderTimestamp with Kueue's default requeuing timestamp (Eviction): when a
    PodsReady timeout evicted it, else its creation."""
    evicted = api.find(api.conditions(workload), api.EVICTED)
    if (
        evicted is not None
        and evicted.get("status") == "True"
        and evicted.get("reason") == api.EVICTED_BY_PODS_READY_TIMEOUT
    ):
        return str(evicted.get("lastTransitionTime", ""))
    return str(workload["metadata"].get("creationTimestamp", ""))


class Scheduler:
    """Admits Workloads; reconciles `SCHEDULE`, one pass over every ClusterQueue."""

    def __init__(self, client: Client, assumed: Assumed, snapshot: Callable[[], Snapshot]) -> None:
        self._client = client
        self._assumed = assumed
        self._snapshot = snapshot

    async def reconcile(self, request: Request) -> Result:
        snapshot = self._snapshot()
        retry = False
        for name, cluster_queue in sorted(snapshot.cluster_queues.items()):
            if snapshot.cluster_queue_active(cluster_queue):
                retry |= not await self._schedule(snapshot, name, cluster_queue)
        return Result(requeue_after=0.1) if retry else Result()

    def _queue(self, snapshot: Snapshot, name: str) -> list[Object]:
        pending = [
            w
            for w in snapshot.workloads
            if admissible(w)
            and snapshot.cluster_queue_name(w) == name
            and snapshot.blocker(w) is None
        ]
        return sorted(
            pending,
            key=lambda w: (-api.priority(w), queue_time(w), snapshot.seen.get(api.key(w), 0)),
        )

    async def _schedule(self, snapshot: Snapshot, name: str, cluster_queue: Object) -> bool:
        """One ClusterQueue's pass; False when a write failed and the pass should run again."""
        spec = cluster_queue.get("spec", {})
        groups = quota.resource_groups(cluster_queue, snapshot.flavors)
        admitted = [
            w
            for w in snapshot.workloads
            if holds_quota(w) and (w["status"].get("admission") or {}).get("clusterQueue") == name
        ]
        policy = (spec.get("preemption") or {}).get("withinClusterQueue") or "Never"
        state = _QueueState(groups, quota.usage_of(admitted), admitted, policy)
        for workload in self._queue(snapshot, name):
            decision = _decide(workload, state)
            if decision.admission is not None:
                admission = {
                    "clusterQueue": name,
                    "podSetAssignments": [p.to_api() for p in decision.admission.pod_sets],
                }
                changed = editable(workload)
                checks = required_checks({"status": {"admission": admission}}, cluster_queue)
                transitions.reserve(changed, admission, checks)
                if not await self._write(workload, changed):
                    return False
                for slot, value in decision.admission.usage().items():
                    state.used[slot] = state.used.get(slot, Fraction(0)) + value
                state.admitted.append(changed)
                continue
            message = decision.message
            for target in decision.targets:
                if api.is_true(target, api.EVICTED):
                    continue
                changed = editable(target)
                transitions.preempt(
                    changed, api.IN_CLUSTER_QUEUE, transitions.preemption_message(workload, name)
                )
                if not await self._write(target, changed):
                    return False
            if decision.targets:
                message += f". Pending the preemption of {len(decision.targets)} workload(s)"
            changed = editable(workload)
            if transitions.unreserve(changed, api.PENDING, message) and not await self._write(
                workload, changed
            ):
                return False
            if decision.targets or spec.get("queueingStrategy") == "StrictFIFO":
                break
        return True

    async def _write(self, before: Object, changed: Object) -> bool:
        try:
            await write_status(self._client, self._assumed, before, changed)
        except (ConflictError, NotFoundError):
            return False
        return True


def _decide(workload: Object, state: _QueueState) -> _Decision:
    """getInitialAssignments: the whole workload; else with preemption; else, for a pod set
    with a minCount, the largest count from count-1 down to minCount that can be admitted."""
    pod_sets = list(workload.get("spec", {}).get("podSets") or [])
    decisions = (
        _attempt(workload, pod_sets, counts, state) for counts in _candidate_counts(pod_sets)
    )
    full = next(decisions)
    tried = itertools.chain([full], decisions)
    return next((d for d in tried if d.admission is not None or d.targets), full)


def _candidate_counts(pod_sets: list[Object]) -> Iterator[list[int]]:
    """Each pod set's count, then, for the first pod set with a minCount (Kueue allows one),
    its count lowered one by one down to that minCount."""
    counts = [int(p.get("count", 1)) for p in pod_sets]
    yield counts
    for index, pod_set in enumerate(pod_sets):
        minimum = pod_set.get("minCount")
        if isinstance(minimum, int):
            for count in range(counts[index] - 1, minimum - 1, -1):
                yield [*counts[:index], count, *counts[index + 1 :]]
            return


def _attempt(
    workload: Object, pod_sets: list[Object], counts: list[int], state: _QueueState
) -> _Decision:
    can_preempt = state.policy != "Never"
    assignment = quota.assign(pod_sets, counts, state.groups, state.used, can_preempt=can_preempt)
    if assignment.fits:
        return _Decision(admission=assignment)
    if assignment.preempt:
        targets = _targets(workload, assignment, state)
        if targets:
            return _Decision(targets=tuple(targets), message=assignment.message())
    return _Decision(message=assignment.message())


def _preemptible(preemptor: Object, candidate: Object, policy: str) -> bool:
    mine, theirs = api.priority(preemptor), api.priority(candidate)
    if theirs < mine:
        return True
    created = (
        str(candidate["metadata"].get("creationTimestamp", "")),
        str(preemptor["metadata"].get("creationTimestamp", "")),
    )
    return policy == "LowerOrNewerEqualPriority" and theirs == mine and created[0] > created[1]


def _reserved_at(workload: Object) -> str:
    found = api.find(api.conditions(workload), api.QUOTA_RESERVED)
    return str((found or {}).get("lastTransitionTime", ""))


def _targets(preemptor: Object, assignment: quota.Assignment, state: _QueueState) -> list[Object]:
    """Classical preemption within a ClusterQueue: candidates already evicted first, then
    the lowest priority, then the latest admitted; taken until the preemptor fits, then
    those it can do without given back, latest taken first."""
    needed, groups, admitted = set(assignment.usage()), state.groups, state.admitted
    candidates = [
        w
        for w in admitted
        if _preemptible(preemptor, w, state.policy) and needed & set(quota.usage_of([w]))
    ]
    candidates.sort(key=_reserved_at, reverse=True)
    candidates.sort(key=lambda w: (not api.is_true(w, api.EVICTED), api.priority(w)))
    kept = [w for w in admitted if not any(w is c for c in candidates)]
    chosen: list[Object] = []
    for candidate in candidates:
        chosen.append(candidate)
        if quota.fits(assignment, quota.usage_of([*kept, *_without(candidates, chosen)]), groups):
            break
    else:
        return []
    for candidate in reversed(chosen[:-1]):
        trial = [w for w in chosen if w is not candidate]
        if quota.fits(assignment, quota.usage_of([*kept, *_without(candidates, trial)]), groups):
            chosen = trial
    return chosen


def _without(candidates: list[Object], chosen: list[Object]) -> list[Object]:
    return [w for w in candidates if not any(w is c for c in chosen)]
