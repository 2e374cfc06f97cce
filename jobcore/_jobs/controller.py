"""Wiring one kind's job controller into a manager: its caches, events and handlers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jobcore._jobs.cached import child_transform
from jobcore._jobs.cached import job_as_cached
from jobcore._jobs.childmap import child_mapper
from jobcore._jobs.hooks import hooks_of
from jobcore._jobs.kind import DEFAULT_AGENT
from jobcore._jobs.kind import DEFAULT_CLUSTER_DOMAIN
from jobcore._jobs.kind import JOB_NAME_LABEL
from jobcore._jobs.kind import AgentSource
from jobcore._jobs.kind import JobKind
from jobcore._jobs.kindcheck import check_kind
from jobcore._jobs.kueueapi import LOCAL_QUEUES
from jobcore._jobs.kueueapi import WORKLOADS
from jobcore._jobs.kueuescope import DEFAULT_LOCAL_QUEUE
from jobcore._jobs.kueuescope import LABELLED_ONLY
from jobcore._jobs.kueuescope import KueueScope
from jobcore._jobs.kueuescope import queue_finder
from jobcore._jobs.managedby import cached_jobs
from jobcore._jobs.managedby import jobcore_runs
from jobcore._jobs.podstate import pod_ended
from jobcore._jobs.queueing import Queueing
from jobcore._jobs.reconciler import JobReconciler
from jobcore._jobs.retries import RETRY_BACKOFF
from jobcore._jobs.retries import RetryBackoff
from jobcore._jobs.scheduling import GangScheduler
from jobcore._runtime.controller import Controller
from jobcore._runtime.events import EventRecorder
from jobcore._runtime.handler import requests_for_owner
from jobcore._runtime.informer import Informer
from jobcore._runtime.manager import Manager
from jobcore._runtime.predicate import FuncPredicate
from jobcore._runtime.resources import NAMESPACES
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource

CHILD_EVENT_DELAY = 0.5
"""Seconds a child's event waits before it reconciles its job, gathering the events of a
gang of pods into one reconcile (Kubernetes' Job controller batches pod events for 1 s)."""


def _ending(child: Object) -> bool:
    """A child being deleted, or a Pod that has ended: its job must see it before it goes."""
    return bool(child["metadata"].get("deletionTimestamp")) or pod_ended(child)


def add_job_controller(
    manager: Manager,
    kind: JobKind[Any],
    *,
    namespace: str | None = None,
    max_concurrent_reconciles: int = 32,
    gang_scheduler: GangScheduler | None = None,
    child_event_delay: float = CHILD_EVENT_DELAY,
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
    agent: AgentSource = DEFAULT_AGENT,
    retry_backoff: RetryBackoff = RETRY_BACKOFF,
    kueue: bool = False,
    kueue_scope: KueueScope = LABELLED_ONLY,
) -> Controller:
    """Wire a controller for `kind` into `manager`: its jobs, and its children by label.

    Children informers are shared between kinds (one per resource, selecting objects that
    carry the job-name label) and cache only objects that a job of an added kind controls,
    so nobody else's labelled objects stay in memory; each kind's controller maps only its
    own children back, and the pods of the batch Jobs a job controls to that job.
    `gang_scheduler` gives every job without `spec.scheduler` a PodGroup of that scheduler.
    A child's event reconciles its job `child_event_delay` seconds later, together with the
    other events of that time; a change to the job itself, a child's deletion and a Pod that
    ended are reconciled at once. `cluster_domain` is the cluster's DNS domain, given to the
    kind as `Job.cluster_domain` for the names it builds; `agent`, where jobcore's launch agent
    comes from, as `Job.agent`. `retry_backoff` spaces a job's
    restarts and replaced pods (by default 10 s, doubling, at most 6 minutes, as a Kubernetes
    Job's). With `kueue` (Kueue's API is served), a job with Kueue's queue-name label runs
    only while Kueue admits its Workload (`Queueing`); `kueue_scope` queues some unlabelled
    jobs too (Kueue's `manageJobsWithoutQueueName`, LocalQueue defaulting: `KueueScope`). A
    kind `check_kind` finds problems in is refused with InvalidKindError.
    """
    check_kind(kind)
    hooks = hooks_of(kind)
    # Named by its plural, unless two kinds share one (kubeflow.org's MPIJob and T9k's).
    name = hooks.controller_name or kind.resource.plural
    # Another controller's jobs are never cached, but for MultiKueue's when jobcore queues
    # them: it keeps their Workloads.
    queued = kueue and hooks.kueue
    runs = hooks.manages or jobcore_runs
    jobs = manager.informer(
        kind.resource,
        namespace=namespace,
        keep=cached_jobs(runs, queued),
        transform=job_as_cached,
    )

    def worth_a_pass(old: Object, new: Object) -> bool:
        """A spec change; for a job MultiKueue runs, a status change too (copied back)."""
        generation = old["metadata"].get("generation") != new["metadata"].get("generation")
        return generation or not runs(new)

    children: dict[Resource, Informer] = {}
    to_job = child_mapper(kind.resource, children)  # reads `children` as they are filled in

    def controlled(obj: Object) -> bool:
        """A child of this kind's jobs, or a pod of a batch Job one of them controls (the
        batch Job is cached first: it exists before its Job controller creates pods, and a
        pod seen too early is kept on its next event)."""
        return bool(to_job(obj))

    for resource in kind.child_resources:
        children[resource] = manager.informer(
            resource,
            namespace=namespace,
            label_selector=JOB_NAME_LABEL,
            keep=controlled,
            transform=child_transform(resource),
        )
    recorder = EventRecorder(
        manager.client,
        component=f"{name}-controller",
        active=manager.elected.is_set,
    )
    manager.add(recorder, needs_leader=False)
    queueing = None
    if queued:
        owned = requests_for_owner(kind.resource)
        workloads = manager.informer(
            WORKLOADS, namespace=namespace, keep=lambda obj: bool(list(owned(obj)))
        )
        queueing = Queueing(
            manager.client,
            kind,
            workloads,
            recorder,
            min_counts=hooks.min_counts,
            queue_of=_queue_finder(manager, kueue_scope, namespace),
        )
    reconciler = JobReconciler(
        kind=kind,
        client=manager.client,
        jobs=jobs,
        children=children,
        recorder=recorder,
        gang_scheduler=gang_scheduler,
        cluster_domain=cluster_domain,
        agent=agent,
        retry_backoff=retry_backoff,
        queueing=queueing,
    )
    if hooks.forget is not None:
        jobs.add_handler(_OnDelete(hooks.forget))
    controller = Controller(name, reconciler, max_concurrent_reconciles=max_concurrent_reconciles)
    controller.watch(jobs, predicates=[FuncPredicate(update_func=worth_a_pass)])
    for informer in children.values():
        controller.watch(
            informer,
            mapper=to_job,
            delay=child_event_delay,
            urgent=_ending,
        )
    if queueing is not None:
        controller.watch(queueing.workloads, mapper=owned)
    manager.add_controller(controller)
    return controller


def _queue_finder(
    manager: Manager, scope: KueueScope, namespace: str | None
) -> Callable[[Object], str | None]:
    """Where a job is queued, with the caches `scope` needs: the namespaces for a selector,
    the LocalQueues named `default` for LocalQueue defaulting."""
    namespaces = None
    if scope.unlabelled and scope.namespace_selector is not None:
        namespaces = manager.informer(NAMESPACES)
    local_queues = None
    if scope.default_local_queue:
        local_queues = manager.informer(
            LOCAL_QUEUES,
            namespace=namespace,
            keep=lambda obj: obj["metadata"].get("name") == DEFAULT_LOCAL_QUEUE,
        )
    return queue_finder(scope, namespaces, local_queues)


class _OnDelete:
    """Tells a kind's `forget(obj)` of each of its jobs that is gone (its metric series)."""

    def __init__(self, forget: Callable[[Object], None]) -> None:
        self._forget = forget

    def on_add(self, obj: Object) -> None:
        pass

    def on_update(self, old: Object, new: Object) -> None:
        pass

    def on_delete(self, obj: Object) -> None:
        self._forget(obj)
