"""A job's T9k `tasks` and `aggregate`: its pods by replica type and by phase, bounded in size.

Each replica type lists its pods by name, with their containers' states. A type with more
pods than a `kubectl get -o yaml` reader can take in, or than the API server stores in one
object (1,000 workers of many containers would pass its 1.5 MiB limit), is compacted: its
`aggregate` counts its pods by phase, and its `status` lists only the pods with a problem,
the first ones with their containers. Every failed pod stays listed, by uid: the reconciler
reads them back to tell a restart it recorded from a new failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Literal

from jobcore._jobs.kind import REPLICA_TYPE_LABEL
from jobcore._jobs.models import Aggregate
from jobcore._jobs.models import ContainerState
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import ReplicaPhase
from jobcore._jobs.models import ReplicaStatus
from jobcore._jobs.models import TaskStatus
from jobcore._jobs.podstate import container_statuses
from jobcore._runtime.resources import Object

LISTED_PODS = 100
"""The most pods a replica type lists in full."""
LISTED_CONTAINERS = 1_000
"""The most container states a replica type lists in full, over all its pods."""
DETAILED_PROBLEMS = 20
"""How many of a compacted type's pods with a problem are listed with their containers."""
_NORMAL_WAITS = frozenset({"ContainerCreating", "PodInitializing"})
"""Why a healthy container waits: its pod is starting."""
_CONTAINER_STATES: tuple[Literal["waiting", "running", "terminated"], ...] = (
    "terminated",
    "running",
    "waiting",
)


def replica_phase(pod: Object) -> ReplicaPhase:
    """The pod's phase, plus `Creating` before it is scheduled and `Deleted` while it goes."""
    if pod["metadata"].get("deletionTimestamp"):
        return "Deleted"
    phase = (pod.get("status") or {}).get("phase")
    if phase is None or (phase == "Pending" and not pod["spec"].get("nodeName")):
        return "Creating"
    return phase  # type: ignore[no-any-return]


def pod_ready(pod: Object) -> bool:
    """Whether the kubelet reports the pod Ready (its Ready condition is True)."""
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _containers(pod: Object) -> list[ContainerState]:
    states = []
    for status in container_statuses(pod):
        state: Mapping[str, Any] = status.get("state") or {}
        name = next((key for key in _CONTAINER_STATES if key in state), None)
        detail = state.get(name) or {} if name else {}
        states.append(
            ContainerState(
                name=status["name"],
                state=name,
                exit_code=detail.get("exitCode"),
                reason=detail.get("reason"),
            )
        )
    return states


def _restarts(pod: Object) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return sum(int(status.get("restartCount") or 0) for status in statuses)


def tasks_and_aggregate(
    pods: Iterable[Object], replica_types: Sequence[str], previous: JobStatus, restarts: int = 0
) -> tuple[list[TaskStatus], Aggregate]:
    """One task per replica type, pods by name; pods the job had before and lost are Deleted.

    A type's restartCount is its containers' restarts plus `restarts`, the times the whole
    job was recreated; it never goes down. A type past LISTED_PODS or LISTED_CONTAINERS is
    compacted (see the module docstring).
    """
    by_type: dict[str, list[Object]] = {kind: [] for kind in replica_types}
    for pod in pods:
        kind = (pod["metadata"].get("labels") or {}).get(REPLICA_TYPE_LABEL)
        if kind in by_type:
            by_type[kind].append(pod)
    gone = {
        (task.type, replica.name): replica for task in previous.tasks for replica in task.status
    }
    tasks, counts = [], Aggregate()
    for kind, members in by_type.items():
        replicas = [
            ReplicaStatus(
                phase=replica_phase(pod),
                name=pod["metadata"]["name"],
                uid=pod["metadata"].get("uid"),
                containers=_containers(pod),
            )
            for pod in members
        ]
        present = {replica.name for replica in replicas}
        for (task_type, name), replica in gone.items():
            if task_type == kind and name not in present:
                replicas.append(replica.model_copy(update={"phase": "Deleted"}))
        replicas.sort(key=lambda replica: _natural(replica.name))
        own = _count(replicas)
        for field in Aggregate.model_fields:
            setattr(counts, field, getattr(counts, field) + getattr(own, field))
        previous_restarts = next((t.restart_count for t in previous.tasks if t.type == kind), 0)
        count = max(previous_restarts, restarts + sum(_restarts(pod) for pod in members))
        task = TaskStatus(type=kind, restart_count=count, status=replicas)
        tasks.append(_compacted(task, own) if _too_long(replicas) else task)
    return tasks, counts


def _count(replicas: Iterable[ReplicaStatus]) -> Aggregate:
    counts = Aggregate()
    for replica in replicas:
        field = replica.phase.lower()
        setattr(counts, field, getattr(counts, field) + 1)
    return counts


def _too_long(replicas: Sequence[ReplicaStatus]) -> bool:
    containers = sum(len(replica.containers) for replica in replicas)
    return len(replicas) > LISTED_PODS or containers > LISTED_CONTAINERS


def _compacted(task: TaskStatus, counts: Aggregate) -> TaskStatus:
    """The task with its counts, listing only its pods with a problem: the first
    DETAILED_PROBLEMS with their containers, the others by name, uid and phase."""
    problems = [replica for replica in task.status if has_problem(replica)]
    listed = [
        replica if i < DETAILED_PROBLEMS else replica.model_copy(update={"containers": []})
        for i, replica in enumerate(problems)
    ]
    return task.model_copy(update={"status": listed, "aggregate": counts})


def has_problem(replica: ReplicaStatus) -> bool:
    """Failed or Unknown, or a container failed or waits on an error (an image pull, say)."""
    if replica.phase in ("Failed", "Unknown"):
        return True
    return any(
        (container.state == "waiting" and container.reason not in (None, *_NORMAL_WAITS))
        or (container.state == "terminated" and container.exit_code not in (None, 0))
        for container in replica.containers
    )


def _natural(name: str) -> list[Any]:
    """Sort key that puts worker-2 before worker-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
