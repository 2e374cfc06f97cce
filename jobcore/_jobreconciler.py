"""The generic job reconciler: drives any JobKind from spec to children to T9k status."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic

import structlog
from pydantic import ValidationError

from jobcore import _metrics
from jobcore._client import Client
from jobcore._controller import Controller, Result
from jobcore._errors import (
    AlreadyExistsError,
    ApiError,
    ForbiddenError,
    JobcoreError,
    NotFoundError,
    TerminalError,
)
from jobcore._events import EventRecorder
from jobcore._expectations import Expectations
from jobcore._handler import Request, requests_for_owner
from jobcore._informer import CONTROLLER_UID_INDEX, Informer
from jobcore._jobkind import (
    JOB_NAME_LABEL,
    FieldError,
    Job,
    JobKind,
    Observed,
    Outcome,
    SpecT,
)
from jobcore._jobmodels import ConditionType, JobStatus, ResumeSpec, RunPolicy
from jobcore._jobparse import parse_job
from jobcore._jobplan import (
    adopt,
    gang_scheduling,
    plan,
    pod_group,
    run_mode_of,
    unserved_kinds,
)
from jobcore._jobpolicy import (
    deadline_left,
    doomed_after_end,
    pending_too_long,
    pod_failures,
    should_retry,
    ttl_left,
)
from jobcore._jobstatus import Lifecycle, PauseState, derive_status, invalid_status
from jobcore._manager import Manager
from jobcore._predicate import GenerationChanged
from jobcore._resources import (
    CONFIGMAPS,
    PODS,
    Object,
    ObjectKey,
    Resource,
    controller_of,
)
from jobcore._scheduling import GangScheduler

_log = structlog.get_logger("jobcore.jobs")

RESTARTING = "Restarting"
"""The Running condition's reason while a failed job is recreated under its backoffLimit."""
FAILED_CREATE = "FailedCreate"
"""The reason (of an Event, and of the Initialized condition) when the API server forbids a
child: a ResourceQuota, a LimitRange or admission turned it down."""
REFUSED_RETRY_SECONDS = 30.0
"""The longest wait between tries to create a refused child."""
_RECHECK_SECONDS = 30.0
CHILD_EVENT_DELAY = 0.5
"""Seconds a child's event waits before it reconciles its job, gathering the events of a
gang of pods into one reconcile (Kubernetes' Job controller batches pod events for 1 s)."""

_WARNINGS: tuple[tuple[ConditionType, str], ...] = (
    ("Running", RESTARTING),
    ("Initialized", "PodGroupUnavailable"),
    ("SpecRejected", "ResumeSpecsImmutable"),
)
_WARNING_STATUS = {"Running": "True", "Initialized": "False", "SpecRejected": "True"}


def _frozen_outcome(status: JobStatus) -> Outcome:
    """A finished job's outcome as its status recorded it: an ended job never runs again."""
    ended = status.condition("Failed" if status.phase == "Failed" else "Completed")
    failure = status.condition("ReplicaFailure")
    return Outcome(
        state="failed" if status.phase == "Failed" else "succeeded",
        reason=(ended.reason or "") if ended else "",
        message=(ended.message or "") if ended else "",
        replica_failure=failure.message if failure and failure.status == "True" else None,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Step(Generic[SpecT]):
    """What one reconcile of a job works from: the job, its last status, its children, the clock."""

    request: Request
    job: Job[SpecT]
    previous: JobStatus
    observed: Observed
    time: float


class JobReconciler(Generic[SpecT]):
    """Reconciles the jobs of one kind.

    Each run: parse and validate the job (`jobcore.parse_job`; an invalid job is marked
    Failed once, with the field named, and not retried); plan the children (`jobcore.plan`:
    the kind's render with run modes and gang scheduling applied); create those that do not
    exist, owned by the job (`jobcore.adopt`; non-Pod children first, then Pods, each group
    concurrently) and, if it created any, stop there until the cache shows them; else update
    ConfigMaps whose data changed, delete owned Pods it no longer wants, apply the run policy
    (retries, timeouts, deadline, clean-up, TTL), derive the status and write it through the
    status subresource only when it changed.
    Expectations keep a lagging cache from creating or deleting a child twice.
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
    ) -> None:
        self.kind = kind
        self.client = client
        self.jobs = jobs
        self.children = children
        self.recorder = recorder
        self.gang_scheduler = gang_scheduler
        self.clock = clock
        self.status_interval = status_interval
        self.expectations = Expectations()
        # The last status written per job, until the cache shows that write.
        self._written: dict[ObjectKey, _Written] = {}
        # The last PodGroup applied per job (by uid): applied again only when it changes.
        self._pod_groups: dict[ObjectKey, tuple[str, Object]] = {}
        # How many passes in a row the API server refused a job's children.
        self._refusals: dict[ObjectKey, int] = {}
        self._kind_name = kind.resource.kind
        for informer in children.values():
            informer.add_handler(_ExpectationObserver(self.expectations, kind.resource))
        jobs.add_handler(_WriteObserver(self._written))

    async def reconcile(self, request: Request) -> Result:
        obj = self.jobs.get(request.name, request.namespace)
        if obj is None:
            self._forget(request)
            return Result()
        if obj["metadata"].get("deletionTimestamp"):
            return Result()
        if not self.expectations.satisfied(request):
            return Result(requeue_after=5.0)  # our own creations' events bring us back sooner
        previous = self._latest_status(obj)
        job, errors = parse_job(self.kind, obj, previous)
        if job is None:
            await self._write_invalid(request, obj, previous, errors)
            return Result()
        _metrics.job_info.labels(self._kind_name, job.namespace, job.name).set(1)
        step = _Step(request, job, previous, self._observe(job.uid), self.clock())
        resume_specs, rejected = _resume_specs(job, previous)
        ended = previous.finished and not _invalid(previous)
        lifecycle = Lifecycle(
            restarts=previous.restarts or 0,
            # An ended job never runs again: pausing it does nothing.
            pause=_pause_state(job, previous, step.observed, ended=ended),
            rejected=rejected,
            resume_specs=resume_specs,
        )
        if ended:
            return await self._end(step, _frozen_outcome(previous), lifecycle)
        return await self._run(step, lifecycle)

    async def _run(self, step: _Step[SpecT], lifecycle: Lifecycle) -> Result:
        """Drive a job that has not ended: its mode, its children, its policy, its status."""
        job, observed = step.job, step.observed
        policy = job.spec.run_policy
        deadline = deadline_left(policy, job.obj["metadata"].get("creationTimestamp"), step.time)
        if deadline is not None and deadline <= 0:
            await self._delete_pods(step.request, observed, keep=_ended_pods(observed))
            message = (
                f"The job did not end within runPolicy.activeDeadlineSeconds "
                f"({policy.active_deadline_seconds} s); its pods were stopped."
            )
            return await self._end(step, Outcome("failed", "DeadlineExceeded", message), lifecycle)
        job, scheduler = gang_scheduling(job, self.gang_scheduler)
        step = dataclasses.replace(step, job=job)
        resume = lifecycle.resume_specs if lifecycle.pause == "resumed" else None
        desired = plan(self.kind, job, observed, scheduler=scheduler, resume_specs=resume or None)
        if scheduler is not None and (
            missing := await self._apply_pod_group(job, scheduler, desired)
        ):
            lifecycle = dataclasses.replace(
                lifecycle, uninitialized=("PodGroupUnavailable", missing)
            )
            _, held = await self._write(
                step, Outcome("pending", "PodGroupUnavailable", missing), lifecycle
            )
            return Result(requeue_after=_soonest(_RECHECK_SECONDS, held))
        # ConfigMaps first, so a Pod created in this pass mounts current data.
        await self._update_config(desired, observed)
        try:
            creation = await self._create_missing(step.request, job, desired, observed)
        except _Refused as refused:
            # Retrying cannot help: the job's spec (or its name) must change.
            await self._write_invalid(step.request, job.obj, step.previous, [refused.error])
            return Result()
        running = step.previous.phase == "Running"
        if running:  # a scale-up or a replaced pod: say so, as the status alone does not
            pods = [o["metadata"]["name"] for o in creation.created if o["kind"] == PODS.kind]
            self._announce_pods(job.obj, "PodCreated", "Created", pods)
        refusal = self._refusal(step, creation.refused)
        if refusal is not None:
            lifecycle = dataclasses.replace(lifecycle, uninitialized=(FAILED_CREATE, refusal[0]))
        elif creation.created:
            # The cache will show the new children and bring us back: the status written
            # then includes them, and this pass leaves the API server to the creations.
            return Result()
        wanted = {o["metadata"]["name"] for o in desired if o["kind"] == PODS.kind}
        stale = _other_mode_pods(desired, observed)
        deleted = await self._delete_pods(step.request, observed, keep=wanted - stale)
        if running:  # a scale-down
            pods = [pod["metadata"]["name"] for pod in deleted]
            self._announce_pods(job.obj, "PodDeleted", "Deleted", pods)
        if stale:
            return Result()  # pods of the other run mode go first; the deletions bring us back
        if job.paused:
            outcome = Outcome("pending", "Paused", "The job is paused.")
        elif job.debugging:
            outcome = _debugging(self.kind.interpret(job, observed), observed, desired)
        else:
            outcome, lifecycle = await self._apply_policy(
                step, self.kind.interpret(job, observed), lifecycle
            )
            # The policy may have written a status already (a restart): derive from that one.
            step = dataclasses.replace(step, previous=self._latest_status(job.obj))
            if outcome.state in ("succeeded", "failed"):
                return await self._end(step, outcome, lifecycle)
        if refusal is not None and outcome.state == "pending" and not job.paused:
            outcome = Outcome("pending", FAILED_CREATE, refusal[0], outcome.replica_failure)
        _, held = await self._write(step, outcome, lifecycle)
        pending = pending_too_long(policy, observed.pods.values(), step.time)[1]
        retry = refusal[1] if refusal is not None else None
        return Result(requeue_after=_soonest(deadline, pending, held, retry))

    def _refusal(
        self, step: _Step[SpecT], refused: Sequence[tuple[Object, ForbiddenError]]
    ) -> tuple[str, float] | None:
        """Say why children were refused, at once: a Warning Event and the status message
        returned, with the seconds until the next try (doubling per refused pass, up to
        REFUSED_RETRY_SECONDS: a raised quota brings no event of its own)."""
        if not refused:
            self._refusals.pop(step.request, None)
            return None
        tries = self._refusals[step.request] = self._refusals.get(step.request, 0) + 1
        obj, error = refused[0]
        more = f" ({len(refused) - 1} more refused likewise)" if len(refused) > 1 else ""
        cause = f"{obj['kind']} {obj['metadata']['name']}: {error.message or error}{more}"
        self.recorder.emit(
            step.job.obj, type="Warning", reason=FAILED_CREATE, message=f"Error creating {cause}"
        )
        message = (
            f"The API server refused {cause}. The controller tries again with backoff, at "
            f"least every {REFUSED_RETRY_SECONDS:.0f} s."
        )
        return message, min(2.0 ** (tries - 1), REFUSED_RETRY_SECONDS)

    async def _apply_policy(
        self, step: _Step[SpecT], outcome: Outcome, lifecycle: Lifecycle
    ) -> tuple[Outcome, Lifecycle]:
        """`pendingTimeoutSeconds`, then `backoffLimit` under `restartPolicy`.

        A retried failure tears the whole gang down (MPI cannot re-admit one rank); the pods
        are recreated once the deletions are seen, and the job stays Running meanwhile.
        """
        policy = step.job.spec.run_policy
        pods = step.observed.pods.values()
        if outcome.state not in ("succeeded", "failed"):
            stuck, _ = pending_too_long(policy, pods, step.time)
            if stuck is not None:
                message = (
                    f"Pod[{stuck}] was Pending for more than runPolicy.pendingTimeoutSeconds "
                    f"({policy.pending_timeout_seconds} s)."
                )
                detail = outcome.replica_failure or message
                return Outcome("failed", "PendingTimeout", message, detail), lifecycle
        if outcome.state == "failed":
            retry = should_retry(policy, pod_failures(pods, self.kind.containers))
            if not retry or policy.backoff_limit == 0:
                return outcome, lifecycle
            counted = _restart_recorded(step.previous, pods)
            if lifecycle.restarts >= policy.backoff_limit and not counted:
                message = (
                    f"The job failed {lifecycle.restarts + 1} times; runPolicy.backoffLimit is "
                    f"{policy.backoff_limit}. {outcome.message}"
                ).strip()
                exceeded = dataclasses.replace(
                    outcome, reason="BackoffLimitExceeded", message=message
                )
                return exceeded, lifecycle
            restarts = lifecycle.restarts + (0 if counted else 1)
            cause = f": {outcome.replica_failure}" if outcome.replica_failure else "."
            message = (
                f"Recreating every pod after a failure (restart {restarts} of "
                f"{policy.backoff_limit}){cause}"
            )
            restarting = Outcome("running", RESTARTING, message, outcome.replica_failure)
            lifecycle = dataclasses.replace(lifecycle, restarts=restarts)
            if not counted:
                # Recorded before the pods go: a crash or a failed deletion in between must
                # not let the job run again uncounted.
                await self._write(step, restarting, lifecycle)
                _metrics.jobs_restarted_total.labels(self._kind_name, step.job.namespace).inc()
            # The failed pods go at once: the condition and its Warning keep what happened.
            await self._delete_pods(step.request, step.observed, keep=set())
            return restarting, lifecycle
        running = step.previous.condition("Running")
        if outcome.state == "pending" and running is not None and running.reason == RESTARTING:
            # Still coming back from a restart: the job stays Running meanwhile.
            still = Outcome("running", RESTARTING, running.message or "", outcome.replica_failure)
            return still, lifecycle
        return outcome, lifecycle

    async def _end(self, step: _Step[SpecT], outcome: Outcome, lifecycle: Lifecycle) -> Result:
        """A job that ended: its clean-up policies, its final status, its TTL."""
        job = step.job
        policy = job.spec.run_policy
        doomed = doomed_after_end(policy, step.observed.pods, self.kind.kept_after_cleanup)
        await self._delete_pods(step.request, step.observed, keep=set(step.observed.pods) - doomed)
        status, held = await self._write(step, outcome, lifecycle)
        left = ttl_left(policy, status, step.time)
        if left is None or left > 0:
            return Result(requeue_after=_soonest(left, held))
        self.recorder.emit(
            job.obj,
            type="Normal",
            reason="TTLExpired",
            message=f"Deleting the job {policy.ttl_seconds_after_finished} s after it ended.",
        )
        with contextlib.suppress(NotFoundError):
            await self.client.delete(self.kind.resource, job.name, job.namespace, uid=job.uid)
        return Result()

    async def _write(
        self, step: _Step[SpecT], outcome: Outcome, lifecycle: Lifecycle
    ) -> tuple[JobStatus, float | None]:
        """Derive the job's status for this pass and write it if it changed; the status, and
        when to come back for a write held back."""
        previous = step.previous
        status = derive_status(
            previous=previous if not _invalid(previous) else JobStatus(),
            pods=step.observed.pods.values(),
            replica_types=self.kind.replica_types,
            desired=self.kind.replicas(step.job),
            outcome=outcome,
            lifecycle=lifecycle,
        )
        return status, await self._write_status(step.job.obj, previous, status)

    # Children ----------------------------------------------------------------------------

    def _observe(self, uid: str) -> Observed:
        return Observed(
            {
                resource: {
                    o["metadata"]["name"]: o for o in informer.by_index(CONTROLLER_UID_INDEX, uid)
                }
                for resource, informer in self.children.items()
            }
        )

    async def _create_missing(
        self, request: Request, job: Job[SpecT], desired: Sequence[Object], observed: Observed
    ) -> _Creation:
        """Create what is missing, non-Pod children before Pods.

        Children the API server forbids (a quota, a LimitRange, admission) are returned as
        refused, and no Pod is created while a non-Pod child is refused; a child it finds
        invalid raises `_Refused`; any other failure raises.
        """
        if unknown := unserved_kinds(self.kind, desired):
            raise TerminalError(f"{self._kind_name} rendered {unknown}, not in its child_resources")
        resources = {resource.kind: resource for resource in self.kind.child_resources}
        missing = [
            o for o in desired if observed.get(resources[o["kind"]], o["metadata"]["name"]) is None
        ]
        creation = _Creation()
        for wave in (
            [o for o in missing if o["kind"] != PODS.kind],
            [o for o in missing if o["kind"] == PODS.kind],
        ):
            if not wave or creation.refused:
                continue
            self.expectations.expect_creations(request, [o["metadata"]["name"] for o in wave])
            results = await asyncio.gather(
                *(self._create(request, job, resources[o["kind"]], o) for o in wave),
                return_exceptions=True,
            )
            failures = [r for r in results if isinstance(r, BaseException)]
            if failure := next((f for f in failures if not isinstance(f, ForbiddenError)), None):
                raise failure
            for obj, result in zip(wave, results, strict=True):
                if isinstance(result, ForbiddenError):
                    creation.refused.append((obj, result))
                else:
                    creation.created.append(obj)
        return creation

    async def _create(
        self, request: Request, job: Job[SpecT], resource: Resource, obj: Object
    ) -> None:
        meta = adopt(job, obj)["metadata"]
        try:
            await self.client.create(resource, obj)
        except AlreadyExistsError:
            self.expectations.creation_observed(request, meta["name"])
            await self._check_owner(job, resource, meta["name"])
        except ApiError as error:
            self.expectations.creation_observed(request, meta["name"])  # never coming
            if error.status in (400, 422):
                message = f"the API server refused {resource.kind} {meta['name']}: {error}"
                raise _Refused(FieldError("spec", message)) from error
            raise
        except Exception:
            self.expectations.creation_observed(request, meta["name"])  # never coming
            raise

    async def _check_owner(self, job: Job[SpecT], resource: Resource, name: str) -> None:
        """A child that exists already must be this job's: another's (a job of another kind
        with the same name wants the same children) is a conflict only a rename resolves."""
        existing = await self.client.get(resource, name, job.namespace)
        owner = controller_of(existing)
        if owner is not None and owner.get("uid") == job.uid:
            return
        if owner is not None and (owner.get("kind"), owner.get("name")) == (
            self._kind_name,
            job.name,
        ):
            # A job deleted and created again: its old children go with the garbage collector.
            raise JobcoreError(f"{resource.kind} {name} still belongs to the job's predecessor")
        held = f"{owner['kind']} {owner['name']}" if owner else "no job"
        message = (
            f"{resource.kind} {name} already exists and belongs to {held}: give this "
            f"{self._kind_name} another name"
        )
        raise _Refused(FieldError("metadata.name", message))

    async def _update_config(self, desired: Sequence[Object], observed: Observed) -> None:
        """Bring existing ConfigMaps' data up to date (e.g. a hostfile after a scale change).

        Other children are only ever created: a Pod cannot change, and a Secret such as an
        ssh key must stay what the running job was given.
        """
        for obj in desired:
            if obj["kind"] != CONFIGMAPS.kind:
                continue
            current = observed.get(CONFIGMAPS, obj["metadata"]["name"])
            if current is not None and current.get("data") != obj.get("data"):
                meta = current["metadata"]
                # A merge patch would keep keys the new data drops; replace the whole map.
                # "add" sets /data whether or not someone removed it.
                patch = [{"op": "add", "path": "/data", "value": obj.get("data") or {}}]
                await self.client.patch(
                    CONFIGMAPS, meta["name"], patch, meta["namespace"], patch_type="json"
                )

    async def _delete_pods(
        self, request: Request, observed: Observed, keep: set[str]
    ) -> list[Object]:
        """Delete the owned Pods not in `keep` (gracefully); those it sent deletions for."""
        doomed = [
            pod
            for name, pod in observed.pods.items()
            if name not in keep and not pod["metadata"].get("deletionTimestamp")
        ]
        if not doomed:
            return []
        self.expectations.expect_deletions(request, [p["metadata"]["name"] for p in doomed])
        for pod in doomed:
            meta = pod["metadata"]
            try:
                await self.client.delete(PODS, meta["name"], meta["namespace"], uid=meta["uid"])
            except NotFoundError:
                self.expectations.deletion_observed(request, meta["name"])
        return doomed

    async def _apply_pod_group(
        self, job: Job[SpecT], scheduler: GangScheduler, desired: Sequence[Object]
    ) -> str | None:
        """Create or update the job's PodGroup before its pods; why not, if its CRD is missing.

        Applied again only when it changed since this process last applied it.
        """
        group = pod_group(self.kind, job, scheduler, desired)
        key = ObjectKey(job.namespace, job.name)
        if self._pod_groups.get(key) == (job.uid, group):
            return None
        resource = scheduler.resource
        try:
            await self.client.apply(resource, group, force=True)
        except NotFoundError:
            return (
                f"{resource.kind} {resource.api_version} is not installed in the cluster: "
                f"install its scheduler or take the job off it (spec.scheduler, or the "
                f"controller's --gang-scheduler); the controller checks again every "
                f"{_RECHECK_SECONDS:.0f} s."
            )
        self._pod_groups[key] = (job.uid, group)
        return None

    # Status ------------------------------------------------------------------------------

    async def _write_invalid(
        self, request: Request, obj: Object, previous: JobStatus, errors: list[FieldError]
    ) -> None:
        """Mark the job Failed with its errors, then clean up its pods as its run policy says
        (a job can become invalid while it runs, or through a child the server finds invalid).
        """
        message = "Invalid spec: " + "; ".join(str(error) for error in errors)
        status = invalid_status(previous, message)
        await self._write_status(obj, previous, status, coalesce=False)
        observed = self._observe(obj["metadata"]["uid"])
        doomed = doomed_after_end(_run_policy(obj), observed.pods, self.kind.kept_after_cleanup)
        await self._delete_pods(request, observed, keep=set(observed.pods) - doomed)

    async def _write_status(
        self, obj: Object, previous: JobStatus, status: JobStatus, *, coalesce: bool = True
    ) -> float | None:
        """Patch the status if it changed; seconds until a held-back write is due, if one is.

        A change of phase, of the conditions' statuses or reasons, or of any other field is
        written at once. A change only in the pods' progress (tasks, aggregate, ready) and in
        conditions' messages (such as "Waiting for 3 of 8 worker(s)") waits until
        `status_interval` has passed since the job's last write: a gang of pods starting
        together then costs one write, not one per pod event. Without `coalesce` (an invalid
        spec's message) it is written at once too.
        """
        meta = obj["metadata"]
        new, old = status.to_api(), previous.to_api()
        if new == old:
            return None
        key = ObjectKey.of(obj)
        if coalesce and _progress_only(new, old) and (last := self._written.get(key)) is not None:
            wait = last.at + self.status_interval - self.clock()
            if wait > 0:
                return wait
        # The resourceVersion the status was derived from: the API server refuses the write
        # (409) if another writer changed the job since, rather than let it be overwritten.
        basis = {"resourceVersion": self._version_read(obj)}
        written = await self.client.patch(
            self.kind.resource,
            meta["name"],
            {"metadata": basis, "status": new},
            meta["namespace"],
            subresource="status",
        )
        version = written["metadata"]["resourceVersion"]
        # The watch may have delivered this very write while the patch was answered.
        cached = self.jobs.get(meta["name"], meta["namespace"])
        seen = cached is not None and cached["metadata"].get("resourceVersion") == version
        self._written[key] = _Written(meta["uid"], version, self.clock(), None if seen else status)
        self._announce(obj, previous, status)
        return None

    def _announce(self, obj: Object, previous: JobStatus, status: JobStatus) -> None:
        """Events and job counters for each transition, judged from the stored status."""
        labels = (self._kind_name, obj["metadata"].get("namespace") or "")
        if _is_initialized(status) and not _is_initialized(previous):
            _metrics.jobs_created_total.labels(*labels).inc()
            self.recorder.emit(
                obj, type="Normal", reason="Initialized", message="Created the job's resources."
            )
        self._announce_conditions(obj, previous, status)
        if status.phase == previous.phase:
            return
        failed = status.condition("Failed")
        if status.phase == "Failed" and failed is not None:
            if not _invalid(status):
                _metrics.jobs_failed_total.labels(*labels).inc()
            replica = status.condition("ReplicaFailure")
            detail = replica.message if replica and replica.status == "True" else None
            message = "; ".join(m for m in (failed.message, detail) if m)
            self.recorder.emit(
                obj, type="Warning", reason=failed.reason or "Failed", message=message
            )
        elif status.phase == "Succeeded":
            _metrics.jobs_succeeded_total.labels(*labels).inc()
            self.recorder.emit(
                obj, type="Normal", reason="Succeeded", message="The job has finished successfully."
            )
        elif status.phase == "Running":
            self.recorder.emit(
                obj, type="Normal", reason="Running", message="All pods are running."
            )
        elif status.phase in ("Paused", "Resuming"):
            self.recorder.emit(
                obj, type="Normal", reason=status.phase, message=f"The job is {status.phase}."
            )

    def _announce_pods(self, obj: Object, reason: str, verb: str, names: Sequence[str]) -> None:
        """A Normal Event per Pod of a running job that was created or deleted."""
        for name in names:
            self.recorder.emit(obj, type="Normal", reason=reason, message=f"{verb} pod {name}")

    def _announce_conditions(self, obj: Object, previous: JobStatus, status: JobStatus) -> None:
        """A Warning for each condition that newly asks for attention, with its message."""
        kind: ConditionType
        for kind, reason in _WARNINGS:
            new, old = status.condition(kind), previous.condition(kind)
            if new is None or new.reason != reason or new.status != _WARNING_STATUS[kind]:
                continue
            if old is not None and (old.reason, old.status) == (new.reason, new.status):
                continue
            self.recorder.emit(obj, type="Warning", reason=reason, message=new.message or reason)

    def _latest_status(self, obj: Object) -> JobStatus:
        """The job's status: what we last wrote, until the cache shows that write.

        Deriving from a cache that lags our own write would restamp conditions; once the
        cache has caught up it is the truth again, other writers' changes included.
        """
        written = self._unseen_write(obj)
        if written is not None and written.status is not None:
            return written.status
        return _read_status(obj)

    def _version_read(self, obj: Object) -> str:
        """The job's resourceVersion that `_latest_status` reads the status of."""
        written = self._unseen_write(obj)
        return written.version if written else str(obj["metadata"]["resourceVersion"])

    def _unseen_write(self, obj: Object) -> _Written | None:
        """This process's last status write to the job, while the cache does not show it."""
        written = self._written.get(ObjectKey.of(obj))
        if written is None or written.status is None or written.uid != obj["metadata"]["uid"]:
            return None
        return written

    def _forget(self, request: Request) -> None:
        self.expectations.forget(request)
        self._written.pop(request, None)
        self._pod_groups.pop(request, None)
        self._refusals.pop(request, None)
        _metrics.remove_job_info(self._kind_name, request.namespace, request.name)


@dataclasses.dataclass(slots=True)
class _Creation:
    """What one pass created, and what the API server forbade it to create (with why)."""

    created: list[Object] = dataclasses.field(default_factory=list)
    refused: list[tuple[Object, ForbiddenError]] = dataclasses.field(default_factory=list)


class _Refused(TerminalError):
    """The API server refused a child for good: the job is invalid as it stands."""

    def __init__(self, error: FieldError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclasses.dataclass(slots=True)
class _Written:
    """This process's last status write to a job: when, and the status while the cache lags it.

    Once the cache shows the write, the status is dropped: the cache is the truth again, and
    a thousand ended jobs need not keep theirs twice.
    """

    uid: str
    version: str
    at: float
    status: JobStatus | None


class _WriteObserver:
    """Marks a written status as seen once the job cache shows its resourceVersion.

    From then on the reconciler reads the cache again, so a change by another writer is seen
    (and corrected) rather than hidden behind this process's own last write.
    """

    def __init__(self, written: Mapping[ObjectKey, _Written]) -> None:
        self._written = written

    def _seen(self, obj: Object) -> None:
        written = self._written.get(ObjectKey.of(obj))
        if written is not None and written.version == obj["metadata"].get("resourceVersion"):
            written.status = None

    def on_add(self, obj: Object) -> None:
        self._seen(obj)

    def on_update(self, old: Object, new: Object) -> None:
        self._seen(new)

    def on_delete(self, obj: Object) -> None:
        pass


_PROGRESS = frozenset({"tasks", "aggregate", "ready"})


def _progress_only(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Whether two statuses differ only in the pods' progress: counts, and condition messages
    (such as "Waiting for 3 of 8 worker(s)"), not phase nor any condition's status or reason."""
    others = (new.keys() | old.keys()) - _PROGRESS - {"conditions"}
    if any(new.get(key) != old.get(key) for key in others):
        return False
    return _unworded(new.get("conditions")) == _unworded(old.get("conditions"))


def _unworded(conditions: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Conditions without their messages."""
    return [{k: v for k, v in c.items() if k != "message"} for c in conditions or ()]


class _ExpectationObserver:
    """Confirms expected creations and deletions of a kind's children from cache events."""

    def __init__(self, expectations: Expectations, owner: Resource) -> None:
        self._expectations = expectations
        self._owner = owner

    def _owner_key(self, obj: Object) -> ObjectKey | None:
        ref = controller_of(obj)
        if ref is None or ref.get("kind") != self._owner.kind:
            return None
        return ObjectKey(obj["metadata"].get("namespace") or "", ref["name"])

    def on_add(self, obj: Object) -> None:
        if key := self._owner_key(obj):
            self._expectations.creation_observed(key, obj["metadata"]["name"])

    def on_update(self, old: Object, new: Object) -> None:
        pass

    def on_delete(self, obj: Object) -> None:
        if key := self._owner_key(obj):
            self._expectations.deletion_observed(key, obj["metadata"]["name"])


def _read_status(obj: Object) -> JobStatus:
    try:
        return JobStatus.model_validate(obj.get("status") or {})
    except ValidationError:
        _log.warning("unreadable job status, starting afresh", job=obj["metadata"]["name"])
        return JobStatus()


def _restart_recorded(previous: JobStatus, pods: Iterable[Object]) -> bool:
    """Whether the failed pods' restart is already in the status: it says Restarting and
    lists every one of them as Failed (a pass that recorded the restart, then could not
    delete them all)."""
    running = previous.condition("Running")
    if running is None or running.reason != RESTARTING:
        return False
    failed = {
        p["metadata"]["uid"] for p in pods if (p.get("status") or {}).get("phase") == "Failed"
    }
    recorded = {r.uid for task in previous.tasks for r in task.status if r.phase == "Failed"}
    return bool(failed) and failed <= recorded


def _run_policy(obj: Object) -> RunPolicy:
    """The run policy of a job whose spec may be invalid elsewhere; the default if it is too."""
    try:
        return RunPolicy.model_validate((obj.get("spec") or {}).get("runPolicy") or {})
    except ValidationError:
        return RunPolicy()


def _invalid(status: JobStatus) -> bool:
    failed = status.condition("Failed")
    return failed is not None and failed.reason == "InvalidSpec" and failed.status == "True"


def _is_initialized(status: JobStatus) -> bool:
    condition = status.condition("Initialized")
    return condition is not None and condition.status == "True"


def _resume_specs(job: Job[Any], previous: JobStatus) -> tuple[list[ResumeSpec] | None, str | None]:
    """The resumeSpecs in force, and why the spec's were refused if they changed.

    The first status written records them; the spec cannot change them afterwards.
    """
    mode = job.spec.run_mode
    given = (mode.pause.resume_specs if mode and mode.pause else None) or None
    if previous.phase is None or _invalid(previous):
        return given, None  # nothing recorded yet: an invalid spec's status records nothing
    kept = previous.resume_specs or None
    if given == kept:
        return kept, None
    shown = json.dumps([spec.to_api() for spec in kept or ()])
    return kept, (
        "spec.runMode.pause.resumeSpecs cannot change after the job is created; "
        f"the controller keeps {shown}."
    )


def _pause_state(
    job: Job[Any], previous: JobStatus, observed: Observed, *, ended: bool = False
) -> PauseState | None:
    if job.paused and not ended:
        return "pausing" if observed.pods else "paused"
    return "resumed" if previous.condition("Paused") is not None else None


def _other_mode_pods(desired: Sequence[Object], observed: Observed) -> set[str]:
    """Wanted pods that exist in the other run mode (debug or not): they must be recreated."""
    stale = set()
    for obj in desired:
        if obj["kind"] != PODS.kind:
            continue
        current = observed.pods.get(obj["metadata"]["name"])
        if current is not None and run_mode_of(current) != run_mode_of(obj):
            stale.add(obj["metadata"]["name"])
    return stale


def _ended(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _ended_pods(observed: Observed) -> set[str]:
    return {name for name, pod in observed.pods.items() if _ended(pod)}


def _debugging(outcome: Outcome, observed: Observed, desired: Sequence[Object]) -> Outcome:
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


def _ending(child: Object) -> bool:
    """A child being deleted, or a Pod that has ended: its job must see it before it goes."""
    return bool(child["metadata"].get("deletionTimestamp")) or _ended(child)


def _soonest(*delays: float | None) -> float | None:
    known = [delay for delay in delays if delay is not None]
    return max(min(known), 0.5) if known else None


def add_job_controller(
    manager: Manager,
    kind: JobKind[Any],
    *,
    namespace: str | None = None,
    max_concurrent_reconciles: int = 32,
    gang_scheduler: GangScheduler | None = None,
    child_event_delay: float = CHILD_EVENT_DELAY,
) -> Controller:
    """Wire a controller for `kind` into `manager`: its jobs, and its children by label.

    Children informers are shared between kinds (one per resource, selecting objects that
    carry the job-name label) and cache only objects that a job of an added kind controls,
    so nobody else's labelled objects stay in memory; each kind's controller maps only its
    own children back.
    `gang_scheduler` gives every job without `spec.scheduler` a PodGroup of that scheduler.
    A child's event reconciles its job `child_event_delay` seconds later, together with the
    other events of that time; a change to the job itself, a child's deletion and a Pod that
    ended are reconciled at once.
    """
    jobs = manager.informer(kind.resource, namespace=namespace)
    to_job = requests_for_owner(kind.resource)

    def controlled(obj: Object) -> bool:
        return bool(to_job(obj))

    children = {
        resource: manager.informer(
            resource, namespace=namespace, label_selector=JOB_NAME_LABEL, keep=controlled
        )
        for resource in kind.child_resources
    }
    recorder = EventRecorder(
        manager.client,
        component=f"{kind.resource.plural}-controller",
        active=manager.elected.is_set,
    )
    manager.add(recorder, needs_leader=False)
    reconciler = JobReconciler(
        kind=kind,
        client=manager.client,
        jobs=jobs,
        children=children,
        recorder=recorder,
        gang_scheduler=gang_scheduler,
    )
    controller = Controller(
        kind.resource.plural, reconciler, max_concurrent_reconciles=max_concurrent_reconciles
    )
    controller.watch(jobs, predicates=[GenerationChanged()])
    for informer in children.values():
        controller.watch(
            informer,
            mapper=to_job,
            delay=child_event_delay,
            urgent=_ending,
        )
    manager.add_controller(controller)
    return controller
