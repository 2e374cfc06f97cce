"""Gang scheduling: a PodGroup per job, and the pod fields each gang scheduler reads.

MPI and torchrun gangs cannot start with part of their pods: a gang scheduler admits all of
a job's pods or none. The job's `spec.scheduler.t9kScheduler` asks for T9k Scheduler; a
controller-wide option picks Volcano or the Kubernetes scheduler-plugins' coscheduling for
every other job. Each scheduler names its own PodGroup resource, scheduler and pod labels.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from fractions import Fraction
from typing import Any
from typing import Protocol

from jobcore._jobs.kind import REPLICA_TYPE_LABEL
from jobcore._jobs.kind import GangPolicy
from jobcore._jobs.kind import Job
from jobcore._jobs.models import PodSpec
from jobcore._jobs.quantity import QuantityError
from jobcore._jobs.quantity import format_quantity
from jobcore._jobs.quantity import parse_quantity
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource


class GangScheduler(Protocol):
    """A gang scheduler: the PodGroup it reads and what it needs on each pod."""

    @property
    def resource(self) -> Resource: ...

    def pod_group(self, job: Job[Any], min_member: int, pods: Sequence[Object]) -> Object:
        """The job's PodGroup, named after the job; jobcore adds namespace, labels, owner."""
        ...

    def decorate(self, job: Job[Any], pod: Object) -> None:
        """Point `pod` at the scheduler and its PodGroup (in place)."""
        ...


def summed_requests(members: Iterable[tuple[PodSpec, int]]) -> dict[str, str]:
    """What `count` pods of each pod spec request together, by resource: a gang's
    minResources, summed as Kubeflow sums it.

    Each container's requests count, and its limits where it requests nothing of that resource
    (Kubernetes then requests the limit); init containers and pod overhead do not. A quantity
    that cannot be read is left out: the API server refuses that pod, saying why.
    """
    totals: dict[str, tuple[Fraction, bool]] = {}
    for spec, count in members:
        for container in spec.containers:
            limits, requests = (_mapping(container.resources, key) for key in _AMOUNTS)
            wanted = {**limits, **requests}
            for name, quantity in wanted.items():
                try:
                    value, binary = parse_quantity(quantity)
                except QuantityError:
                    continue
                total, was_binary = totals.get(name, (Fraction(0), binary))
                totals[name] = (total + value * count, was_binary)
    return {name: format_quantity(value, binary) for name, (value, binary) in totals.items()}


_AMOUNTS = ("limits", "requests")


def _mapping(resources: dict[str, Any] | None, key: str) -> dict[str, Any]:
    value = (resources or {}).get(key)
    return value if isinstance(value, dict) else {}


def _pod_group(resource: Resource, job: Job[Any], spec: dict[str, Any]) -> Object:
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": job.name},
        "spec": spec,
    }


def _gang_spec(gang: GangPolicy, min_member: int) -> dict[str, Any]:
    """minMember (the job's own minAvailable, else all its pods) and its minResources."""
    spec: dict[str, Any] = {"minMember": gang.min_available or min_member}
    if gang.min_resources:
        spec["minResources"] = dict(gang.min_resources)
    return spec


def _priority_class(pods: Sequence[Object]) -> str | None:
    return next(
        (p["spec"]["priorityClassName"] for p in pods if p["spec"].get("priorityClassName")), None
    )


class T9kScheduler:
    """T9k Scheduler, asked for by the job's `spec.scheduler.t9kScheduler{queue, priority}`.

    As a controller-wide default, jobs without their own setting go to `queue` at `priority`.
    """

    resource = Resource("scheduler.tensorstack.dev", "v1beta1", "PodGroup", "podgroups")

    def __init__(
        self, *, queue: str = "default", priority: int = 0, scheduler_name: str = "t9k-scheduler"
    ) -> None:
        self.queue = queue
        self.priority = priority
        self.scheduler_name = scheduler_name

    def _policy(self, job: Job[Any]) -> tuple[str, int]:
        own = job.policy.scheduler.t9k_scheduler if job.policy.scheduler else None
        return (own.queue, own.priority) if own else (self.queue, self.priority)

    def pod_group(self, job: Job[Any], min_member: int, pods: Sequence[Object]) -> Object:
        queue, priority = self._policy(job)
        spec = {"minMember": min_member, "queue": queue, "priority": priority}
        return _pod_group(self.resource, job, spec)

    def decorate(self, job: Job[Any], pod: Object) -> None:
        labels = pod["metadata"].setdefault("labels", {})
        labels["scheduler.tensorstack.dev/group-name"] = job.name
        labels["scheduler.tensorstack.dev/queue"] = self._policy(job)[0]
        labels["scheduler.tensorstack.dev/role"] = labels.get(REPLICA_TYPE_LABEL, "")
        pod["spec"]["schedulerName"] = self.scheduler_name


class Volcano:
    """Volcano: `scheduling.volcano.sh/v1beta1` PodGroups, found through a pod annotation.

    The queue is the job's `scheduling.volcano.sh/queue-name` annotation, else `queue`; the
    priority class is the pods' `priorityClassName`, as Volcano's own job controller does.
    """

    resource = Resource("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups")
    QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
    GROUP_ANNOTATION = "scheduling.k8s.io/group-name"

    def __init__(self, *, queue: str | None = None, scheduler_name: str = "volcano") -> None:
        self.queue = queue
        self.scheduler_name = scheduler_name

    def pod_group(self, job: Job[Any], min_member: int, pods: Sequence[Object]) -> Object:
        annotations = job.obj["metadata"].get("annotations") or {}
        gang = job.policy.gang or GangPolicy()
        spec = _gang_spec(gang, min_member)
        if queue := gang.queue or annotations.get(self.QUEUE_ANNOTATION) or self.queue:
            spec["queue"] = queue
        if priority_class := gang.priority_class or _priority_class(pods):
            spec["priorityClassName"] = priority_class
        return _pod_group(self.resource, job, spec)

    def decorate(self, job: Job[Any], pod: Object) -> None:
        pod["metadata"].setdefault("annotations", {})[self.GROUP_ANNOTATION] = job.name
        pod["spec"]["schedulerName"] = self.scheduler_name


class SchedulerPlugins:
    """The coscheduling plugin of kubernetes-sigs/scheduler-plugins: `scheduling.x-k8s.io`
    PodGroups, found through a pod label; `schedule_timeout` bounds a partial gang's wait."""

    resource = Resource("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups")
    GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

    def __init__(
        self,
        *,
        scheduler_name: str = "scheduler-plugins-scheduler",
        schedule_timeout_seconds: int | None = None,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.schedule_timeout_seconds = schedule_timeout_seconds

    def pod_group(self, job: Job[Any], min_member: int, pods: Sequence[Object]) -> Object:
        gang = job.policy.gang or GangPolicy()
        spec = _gang_spec(gang, min_member)
        timeout = gang.schedule_timeout_seconds or self.schedule_timeout_seconds
        if timeout is not None:
            spec["scheduleTimeoutSeconds"] = timeout
        return _pod_group(self.resource, job, spec)

    def decorate(self, job: Job[Any], pod: Object) -> None:
        pod["metadata"].setdefault("labels", {})[self.GROUP_LABEL] = job.name
        pod["spec"]["schedulerName"] = self.scheduler_name


def scheduler_for(job: Job[Any], default: GangScheduler | None) -> GangScheduler | None:
    """The job's own T9k Scheduler request wins over the controller's default."""
    policy = job.policy.scheduler
    if policy is not None and policy.t9k_scheduler is not None:
        return T9kScheduler()
    return default
