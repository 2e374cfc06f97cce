"""The generic job reconciler: drives any JobKind from spec to children to T9k status.

A pass over a job is a list of steps, each in a module of its own:

1. read the job, its last status and its children (`ParsedSpecs.parse`, which parses a spec
   once per generation, `StatusWriter.latest`, `JobChildren.observe`);
2. decide its lifecycle and run mode (`jobcore._jobs.decide`: ended, paused, resumed,
   debugging, its deadline) and plan its children (`plan_children`, with gang scheduling);
3. create and delete children (`JobChildren`): the plan's missing ones (none while a retry
   waits), ConfigMaps brought up to date, pods no longer wanted;
4. judge the kind's outcome under the run policy (`jobcore._jobs.retries`: a pending
   timeout, a restart, the backoff limit, ended pods replaced, when the pods come back);
5. derive and write the status (`derive_status`, `StatusWriter`); once the job ended, its
   clean-up and TTL (`JobEnding`, which also fails an invalid job);
6. announce (`Announcer`): Events and metrics for what changed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Generic

from jobcore._jobs import decide
from jobcore._jobs import metrics
from jobcore._jobs import retries
from jobcore._jobs.admission import AdmissionConflict
from jobcore._jobs.announce import FAILED_CREATE
from jobcore._jobs.announce import Announcer
from jobcore._jobs.children import RECHECK_SECONDS
from jobcore._jobs.children import ChildRefused
from jobcore._jobs.children import JobChildren
from jobcore._jobs.ending import JobEnding
from jobcore._jobs.hooks import hooks_of
from jobcore._jobs.kind import DEFAULT_AGENT
from jobcore._jobs.kind import DEFAULT_CLUSTER_DOMAIN
from jobcore._jobs.kind import AgentSource
from jobcore._jobs.kind import Job
from jobcore._jobs.kind import JobKind
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import Outcome
from jobcore._jobs.kind import SpecT
from jobcore._jobs.managedby import jobcore_runs
from jobcore._jobs.models import JobStatus
from jobcore._jobs.parse import ParsedSpecs
from jobcore._jobs.plan import UnservedChildren
from jobcore._jobs.plan import plan_children
from jobcore._jobs.policy import DEADLINE_EXCEEDED
from jobcore._jobs.policy import pending_too_long
from jobcore._jobs.queueing import Queueing
from jobcore._jobs.refusals import Refusals
from jobcore._jobs.scheduling import GangScheduler
from jobcore._jobs.status import Lifecycle
from jobcore._jobs.status import derive_status
from jobcore._jobs.writer import CONFLICT_RETRY_SECONDS
from jobcore._jobs.writer import StatusWriter
from jobcore._runtime.client import Client
from jobcore._runtime.controller import Result
from jobcore._runtime.events import EventRecorder
from jobcore._runtime.expectations import Expectations
from jobcore._runtime.handler import Request
from jobcore._runtime.informer import Informer
from jobcore._runtime.resources import BATCH_JOBS
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource


@dataclasses.dataclass(frozen=True, slots=True)
class _Step(Generic[SpecT]):
    """What one reconcile of a job works from: the job, its last status, its children, the clock."""

    request: Request
    job: Job[SpecT]
    previous: JobStatus
    observed: Observed
    time: float


@dataclasses.dataclass(frozen=True, slots=True)
class _Sync:
    """What step 3 leaves to the rest of the pass.

    `wait`: it created children, deleted pods of the other run mode, or met a ConfigMap newer
    than the cache's, whose events bring the job back; `refusal`: why the API server forbade
    children, and `retry` when to try again.
    """

    wait: bool = False
    refusal: str | None = None
    retry: float | None = None


class JobReconciler(Generic[SpecT]):
    """Reconciles the jobs of one kind: `reconcile` runs the steps above for one job.

    An invalid job is marked Failed once, with the fields named, and not retried; a job that
    created children stops its pass there until the cache shows them. Expectations keep a
    lagging cache from creating or deleting a child twice.
    """

    def __init__(
        self,
        *,
        kind: JobKind[SpecT],
        client: Client,
        jobs: Informer,
        children: Mapping[Resource, Informer],
        recorder: EventRecorder,
        gang_scheduler: GangScheduler | None = None,
        clock: Callable[[], float] = time.time,
        status_interval: float = 1.0,
        cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
        agent: AgentSource = DEFAULT_AGENT,
        retry_backoff: retries.RetryBackoff = retries.RETRY_BACKOFF,
        queueing: Queueing | None = None,
    ) -> None:
        self.kind = kind
        self.queueing = queueing
        self.retry_backoff = retry_backoff
        self.jobs = jobs
        self.gang_scheduler = gang_scheduler
        self.clock = clock
        self.expectations = Expectations()
        self.specs = ParsedSpecs(kind, cluster_domain=cluster_domain, agent=agent)
        self.children = JobChildren(kind, client, children, self.expectations)
        hooks = hooks_of(kind)
        self.runs = hooks.manages or jobcore_runs
        self.announcer = Announcer(recorder, kind.resource.kind, also=hooks.announce)
        self.writer = StatusWriter(
            client,
            kind.resource,
            jobs,
            self.announcer.transitions,
            part=hooks.status_part,
            interval=status_interval,
            clock=clock,
        )
        self.refusals = Refusals(self.announcer)
        self.ending = JobEnding(
            kind=kind,
            client=client,
            children=self.children,
            writer=self.writer,
            announcer=self.announcer,
        )

    async def reconcile(self, request: Request) -> Result:
        obj = self.jobs.get(request.name, request.namespace)
        if obj is None:
            self._forget(request)
            if self.queueing is not None:
                await self.queueing.forget(request.namespace, request.name)
            return Result()
        if obj["metadata"].get("deletionTimestamp"):
            return Result()
        if not self.expectations.satisfied(request):
            # Our own creations' and deletions' events bring us back sooner; the pods being
            # deleted that have stopped go now, not when the kubelet gets to them.
            await self.children.remove_stopped(request, obj["metadata"]["uid"])
            return Result(requeue_after=5.0)
        previous = self.writer.latest(obj)
        job, errors = self.specs.parse(obj, previous)
        # An ended job keeps its outcome, whatever its spec becomes.
        ended = decide.frozen_outcome(previous) if decide.has_ended(previous) else None
        if not self.runs(obj):  # run by MultiKueue in another cluster: only its Workload here
            if self.queueing is not None and job is not None:
                await self.queueing.dispatched(job, ended)
            return Result()
        if job is None and ended is not None:
            ttl = await self.ending.finish_unparsed(
                request=request, obj=obj, previous=previous, now=self.clock()
            )
            return Result(requeue_after=ttl)
        if job is None:
            await self.ending.fail_invalid(
                request=request, obj=obj, previous=previous, errors=errors
            )
            return Result()
        metrics.job_info.labels(self.kind.resource.kind, job.namespace, job.name).set(1)
        step = _Step(
            request, job, previous, self.children.observe(job.namespace, job.uid), self.clock()
        )
        if self.queueing is not None and ended is None:  # held while Kueue has not admitted it
            step = dataclasses.replace(step, job=await self.queueing.admit(job, step.observed))
        lifecycle = decide.lifecycle_of(step.job, previous, step.observed)
        if ended is not None:
            return await self._end(step, ended, lifecycle)
        return await self._run(step, lifecycle)

    async def _run(self, step: _Step[SpecT], lifecycle: Lifecycle) -> Result:
        """Drive a job that has not ended: its deadline, its children, its policy, its status."""
        job, observed = step.job, step.observed
        policy = job.policy.run_policy
        deadline, exceeded = decide.deadline(job, step.previous, step.time)
        if exceeded is not None:
            return await self._end(step, exceeded, lifecycle)
        resume = lifecycle.resume_specs if lifecycle.pause == "resumed" else None
        try:
            planned = plan_children(
                self.kind, job, observed, self.gang_scheduler, resume_specs=resume or None
            )
        except (UnservedChildren, AdmissionConflict) as refused:  # said, not retried
            await self.ending.fail_invalid(
                request=step.request, obj=job.obj, previous=step.previous, errors=[refused.error]
            )
            return Result()
        job, desired = planned.job, planned.desired
        step = dataclasses.replace(step, job=job)
        if (
            planned.scheduler is not None
            and planned.pod_group is not None
            and (
                missing := await self.children.apply_pod_group(
                    job, planned.scheduler, planned.pod_group
                )
            )
        ):
            lifecycle = dataclasses.replace(
                lifecycle, uninitialized=("PodGroupUnavailable", missing)
            )
            waiting = Outcome("pending", "PodGroupUnavailable", missing)
            _, held = await self._write(step, waiting, lifecycle)
            return Result(requeue_after=decide.soonest(RECHECK_SECONDS, held))
        replaced = [] if job.paused else decide.dropped_pods(desired, observed)
        try:
            sync = await self._sync_children(step, desired, lifecycle, keep=replaced)
        except ChildRefused as refused:
            # Retrying cannot help: the job's spec (or its name) must change.
            await self.ending.fail_invalid(
                request=step.request, obj=job.obj, previous=step.previous, errors=[refused.error]
            )
            return Result()
        if sync.wait:
            return Result()
        if sync.refusal is not None:
            lifecycle = dataclasses.replace(lifecycle, uninitialized=(FAILED_CREATE, sync.refusal))
        verdict = await self._outcome(step, desired, lifecycle, replaced, refusal=sync.refusal)
        if verdict is None:  # the status refused the retry's record: nothing was deleted
            return Result(requeue_after=CONFLICT_RETRY_SECONDS)
        # The policy may have written a status already (a restart): derive from that one.
        step = dataclasses.replace(step, previous=self.writer.latest(job.obj))
        if verdict.outcome.ended:
            return await self._end(step, verdict.outcome, verdict.lifecycle)
        _, held = await self._write(step, verdict.outcome, verdict.lifecycle)
        pending = pending_too_long(policy, observed.pods.values(), step.time)[1]
        return Result(
            requeue_after=decide.soonest(deadline, pending, held, sync.retry, verdict.wait)
        )

    async def _sync_children(
        self,
        step: _Step[SpecT],
        desired: Sequence[Object],
        lifecycle: Lifecycle,
        *,
        keep: Sequence[str],
    ) -> _Sync:
        """Step 3: update ConfigMaps, create what the plan lacks, delete pods not wanted.

        While the lifecycle's last retry waits, no missing pod is created, and in a restart's
        wait every pod is deleted (`retries.retry_hold`); the pods in `keep` are replaced,
        which step 4 records before it deletes them.
        """
        job, observed = step.job, step.observed
        hold = retries.retry_hold(step.previous, lifecycle, step.time)
        # ConfigMaps first, so a Pod created in this pass mounts current data.
        if not await self.children.update_config(desired, observed):
            return _Sync(wait=True)
        creatable = (
            [o for o in desired if o["kind"] != PODS.kind or o["metadata"]["name"] in observed.pods]
            if hold
            else desired
        )
        creation = await self.children.create_missing(step.request, job, creatable, observed)
        running = step.previous.phase == "Running"
        if running:  # a scale-up or a replaced pod: say so, as the status alone does not
            self.announcer.pods(job.obj, "PodCreated", "Created", _pod_names(creation.created))
        refusal, retry = self.refusals.said(step.request, job.obj, creation.refused)
        if refusal is None and creation.created:
            # The cache will show the new children and bring us back: the status written
            # then includes them, and this pass leaves the API server to the creations.
            return _Sync(wait=True)
        wanted = {o["metadata"]["name"] for o in desired if o["kind"] == PODS.kind}
        if hold == "all":
            wanted = set()
        stale = decide.other_mode_pods(desired, observed)
        deleted = await self.children.delete_pods(
            step.request, observed, keep=(wanted - stale) | set(keep)
        )
        batch_jobs = {o["metadata"]["name"] for o in desired if o["kind"] == BATCH_JOBS.kind}
        await self.children.delete_batch_jobs(step.request, observed, keep=batch_jobs)
        if running:  # a scale-down
            self.announcer.pods(job.obj, "PodDeleted", "Deleted", _pod_names(deleted))
        # Pods of the other run mode go first; their deletions bring the job back.
        return _Sync(wait=bool(stale), refusal=refusal, retry=retry)

    async def _outcome(
        self,
        step: _Step[SpecT],
        desired: Sequence[Object],
        lifecycle: Lifecycle,
        replaced: Sequence[str],
        *,
        refusal: str | None,
    ) -> retries.Verdict | None:
        """Step 4: the kind's outcome as the run mode and the run policy make it (a job still
        pending says why its children were refused), and the pods a restart or a replacement
        deletes. A new retry is written to the status first: None when the API server
        refused that write (a conflict), and nothing was deleted."""
        job, observed = step.job, step.observed
        policy = None if job.debugging or job.paused else job.policy.run_policy
        if job.held is not None:
            outcome = Outcome("pending", "Queued", job.held)
        elif job.paused:
            outcome = Outcome("pending", "Paused", "The job is paused.")
        else:
            outcome = self.kind.interpret(job, observed)
            if job.debugging:
                outcome = decide.debugging(outcome, observed, desired)
            if refusal is not None and outcome.state == "pending":
                outcome = Outcome("pending", FAILED_CREATE, refusal, outcome.replica_failure)
        verdict = retries.judge(
            outcome,
            lifecycle,
            policy=policy,
            previous=step.previous,
            pods=observed.pods,
            containers=self.kind.containers,
            replaced=replaced,
            backoff=self.retry_backoff,
            now=step.time,
        )
        if verdict.retried:
            # Recorded before the pods go: a crash or a failed deletion in between must not
            # let the job run again uncounted, nor sooner than its backoff.
            _, held = await self._write(step, verdict.outcome, verdict.lifecycle, coalesce=False)
            if held is not None:
                return None
            self.announcer.retried(job.obj, verdict)
        if verdict.restart is not None:
            # The failed pods go at once: the condition and its Warning keep what happened.
            await self.children.delete_pods(step.request, observed, keep=set())
            await self.children.delete_batch_jobs(step.request, observed, keep=set())
        elif verdict.replaced:
            keep = set(observed.pods) - set(verdict.replaced)
            deleted = await self.children.delete_pods(step.request, observed, keep=keep)
            self.announcer.pods(job.obj, "PodDeleted", "Deleted", _pod_names(deleted))
        return verdict

    async def _end(self, step: _Step[SpecT], outcome: Outcome, lifecycle: Lifecycle) -> Result:
        """A job that ended: its final status first, then its clean-up and TTL (`JobEnding`)."""
        status, held = await self._write(step, outcome, lifecycle)
        if held is not None and not decide.has_ended(step.previous):
            return Result(requeue_after=held)  # not recorded yet: delete nothing
        ttl = await self.ending.finish(
            request=step.request,
            obj=step.job.obj,
            observed=step.observed,
            policy=step.job.policy.run_policy,
            status=status,
            stopped=outcome.reason == DEADLINE_EXCEEDED,
            now=step.time,
        )
        if self.queueing is not None:
            await self.queueing.finish(step.job, outcome)
        return Result(requeue_after=decide.soonest(ttl, held))

    async def _write(
        self, step: _Step[SpecT], outcome: Outcome, lifecycle: Lifecycle, *, coalesce: bool = True
    ) -> tuple[JobStatus, float | None]:
        """Step 5: derive the job's status for this pass and write it if it changed; the
        status, and when to come back for a write held back (or, without `coalesce`, refused
        by a conflict: then it was not written)."""
        previous = step.previous
        status = derive_status(
            previous=previous if not decide.is_invalid(previous) else JobStatus(),
            pods=step.observed.pods.values(),
            replica_types=self.kind.replica_types,
            desired=self.kind.replicas(step.job),
            outcome=outcome,
            lifecycle=lifecycle,
        )
        return status, await self.writer.write(step.job.obj, previous, status, coalesce=coalesce)

    def _forget(self, request: Request) -> None:
        self.expectations.forget(request)
        self.specs.forget(request)
        self.writer.forget(request)
        self.children.forget(request)
        self.refusals.forget(request)
        metrics.remove_job_info(self.kind.resource.kind, request.namespace, request.name)


def _pod_names(objects: Sequence[Object]) -> list[str]:
    return [o["metadata"]["name"] for o in objects if o["kind"] == PODS.kind]
