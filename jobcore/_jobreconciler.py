"""The generic job reconciler: drives any JobKind from spec to children to T9k status."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Generic

import structlog
from pydantic import ValidationError

from jobcore import _metrics
from jobcore._client import Client
from jobcore._controller import Controller, Result
from jobcore._errors import AlreadyExistsError, NotFoundError, TerminalError
from jobcore._events import EventRecorder
from jobcore._expectations import Expectations
from jobcore._handler import Request, requests_for_owner
from jobcore._informer import CONTROLLER_UID_INDEX, Informer
from jobcore._jobkind import (
    JOB_NAME_LABEL,
    REPLICA_TYPE_LABEL,
    FieldError,
    Job,
    JobKind,
    Observed,
    Outcome,
    SpecT,
)
from jobcore._jobmodels import JobStatus
from jobcore._jobstatus import derive_status, invalid_status
from jobcore._manager import Manager
from jobcore._predicate import GenerationChanged
from jobcore._resources import (
    CONFIGMAPS,
    PODS,
    Object,
    ObjectKey,
    Resource,
    controller_of,
    owner_reference,
)

_log = structlog.get_logger("jobcore.jobs")


def field_errors(error: ValidationError) -> list[FieldError]:
    """pydantic's errors as field paths in the API's camelCase, under `spec`."""
    return [
        FieldError(".".join(["spec", *(str(part) for part in item["loc"])]), item["msg"])
        for item in error.errors()
    ]


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


class JobReconciler(Generic[SpecT]):
    """Reconciles the jobs of one kind.

    Each run: parse and validate the spec (an invalid job is marked Failed once, with the
    field named, and not retried); create the children `render` asks for that do not exist
    (non-Pod children first, then Pods, each group concurrently) and, if it created any, stop
    there until the cache shows them; else update ConfigMaps whose data changed, delete owned
    Pods it no longer asks for, derive
    the status and write it through the status subresource only when it changed.
    Expectations keep a lagging cache from creating a child twice.
    """

    def __init__(
        self,
        *,
        kind: JobKind[SpecT],
        client: Client,
        jobs: Informer,
        children: Mapping[Resource, Informer],
        recorder: EventRecorder,
    ) -> None:
        self.kind = kind
        self.client = client
        self.jobs = jobs
        self.children = children
        self.recorder = recorder
        self.expectations = Expectations()
        # The last status written per job (by uid): the cache may not show it yet.
        self._written: dict[ObjectKey, tuple[str, JobStatus]] = {}
        self._kind_name = kind.resource.kind
        for informer in children.values():
            informer.add_handler(_ExpectationObserver(self.expectations, kind.resource))

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
        job, errors = self._parse(obj, previous)
        if job is None:
            await self._write_invalid(obj, previous, errors)
            return Result()
        _metrics.job_info.labels(self._kind_name, job.namespace, job.name).set(1)
        observed = self._observe(job.uid)
        if previous.finished and not _invalid(previous):
            outcome = _frozen_outcome(previous)
        else:
            desired = self.kind.render(job, observed)
            # ConfigMaps first, so a Pod created in this pass mounts current data.
            await self._update_config(desired, observed)
            if await self._create_missing(request, job, desired, observed):
                # The cache will show the new children and bring us back: the status written
                # then includes them, and this pass leaves the API server to the creations.
                return Result()
            wanted = {o["metadata"]["name"] for o in desired if o.get("kind") == PODS.kind}
            await self._delete_pods(request, observed, keep=wanted)
            outcome = self.kind.interpret(job, observed)
        if outcome.state in ("succeeded", "failed") and job.spec.run_policy.clean_up_workers:
            await self._delete_pods(request, observed, keep=self._kept(observed))
        status = derive_status(
            previous=previous if not _invalid(previous) else JobStatus(),
            pods=observed.pods.values(),
            replica_types=self.kind.replica_types,
            desired=self.kind.replicas(job),
            outcome=outcome,
        )
        await self._write_status(job.obj, previous, status)
        return Result()

    # Parsing -----------------------------------------------------------------------------

    def _parse(
        self, obj: Object, previous: JobStatus
    ) -> tuple[Job[SpecT] | None, list[FieldError]]:
        meta = obj["metadata"]
        try:
            spec = self.kind.spec_model.model_validate(obj.get("spec") or {})
        except ValidationError as error:
            return None, field_errors(error)
        job = Job(
            kind=self._kind_name,
            name=meta["name"],
            namespace=meta.get("namespace") or "",
            uid=meta["uid"],
            spec=spec,
            status=previous,
            obj=obj,
        )
        errors = self.kind.validate(job)
        return (None, errors) if errors else (job, [])

    def _observe(self, uid: str) -> Observed:
        return Observed(
            {
                resource: {
                    o["metadata"]["name"]: o for o in informer.by_index(CONTROLLER_UID_INDEX, uid)
                }
                for resource, informer in self.children.items()
            }
        )

    def _kept(self, observed: Observed) -> set[str]:
        kept_types = set(self.kind.kept_after_cleanup)
        return {
            name
            for name, pod in observed.pods.items()
            if (pod["metadata"].get("labels") or {}).get(REPLICA_TYPE_LABEL) in kept_types
        }

    # Children ----------------------------------------------------------------------------

    async def _create_missing(
        self, request: Request, job: Job[SpecT], desired: Sequence[Object], observed: Observed
    ) -> int:
        """Create what is missing, non-Pod children before Pods; how many; raise on failure."""
        resources = {resource.kind: resource for resource in self.kind.child_resources}
        if unknown := {o["kind"] for o in desired} - resources.keys():
            raise TerminalError(
                f"{self._kind_name} rendered {sorted(unknown)}, not in its child_resources"
            )
        missing = [
            o for o in desired if observed.get(resources[o["kind"]], o["metadata"]["name"]) is None
        ]
        for wave in (
            [o for o in missing if o["kind"] != PODS.kind],
            [o for o in missing if o["kind"] == PODS.kind],
        ):
            if not wave:
                continue
            self.expectations.expect_creations(request, [o["metadata"]["name"] for o in wave])
            results = await asyncio.gather(
                *(self._create(request, job, resources[o["kind"]], o) for o in wave),
                return_exceptions=True,
            )
            failures = [r for r in results if isinstance(r, BaseException)]
            if failures:
                raise failures[0]
        return len(missing)

    async def _create(
        self, request: Request, job: Job[SpecT], resource: Resource, obj: Object
    ) -> None:
        meta = obj["metadata"]
        meta["namespace"] = job.namespace
        meta["labels"] = {**(meta.get("labels") or {}), **job.labels()}
        meta["ownerReferences"] = [owner_reference(job.obj)]
        try:
            await self.client.create(resource, obj)
        except AlreadyExistsError:
            self.expectations.creation_observed(request, meta["name"])
        except Exception:
            self.expectations.creation_observed(request, meta["name"])  # never coming
            raise

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
                patch = [{"op": "replace", "path": "/data", "value": obj.get("data") or {}}]
                await self.client.patch(
                    CONFIGMAPS, meta["name"], patch, meta["namespace"], patch_type="json"
                )

    async def _delete_pods(self, request: Request, observed: Observed, keep: set[str]) -> None:
        doomed = [
            pod
            for name, pod in observed.pods.items()
            if name not in keep and not pod["metadata"].get("deletionTimestamp")
        ]
        if not doomed:
            return
        self.expectations.expect_deletions(request, [p["metadata"]["name"] for p in doomed])
        for pod in doomed:
            meta = pod["metadata"]
            try:
                await self.client.delete(PODS, meta["name"], meta["namespace"], uid=meta["uid"])
            except NotFoundError:
                self.expectations.deletion_observed(request, meta["name"])

    # Status ------------------------------------------------------------------------------

    async def _write_invalid(
        self, obj: Object, previous: JobStatus, errors: list[FieldError]
    ) -> None:
        message = "Invalid spec: " + "; ".join(str(error) for error in errors)
        status = invalid_status(previous, message)
        await self._write_status(obj, previous, status)

    async def _write_status(self, obj: Object, previous: JobStatus, status: JobStatus) -> None:
        meta = obj["metadata"]
        new, old = status.to_api(), previous.to_api()
        if new == old:
            return
        await self.client.patch(
            self.kind.resource,
            meta["name"],
            {"status": new},
            meta["namespace"],
            subresource="status",
        )
        self._written[ObjectKey.of(obj)] = (meta["uid"], status)
        self._announce(obj, previous, status)

    def _announce(self, obj: Object, previous: JobStatus, status: JobStatus) -> None:
        """Events and job counters for each transition, judged from the stored status."""
        labels = (self._kind_name, obj["metadata"].get("namespace") or "")
        if _is_initialized(status) and not _is_initialized(previous):
            _metrics.jobs_created_total.labels(*labels).inc()
            self.recorder.emit(
                obj, type="Normal", reason="Initialized", message="Created the job's resources."
            )
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

    def _latest_status(self, obj: Object) -> JobStatus:
        """The job's status: what we last wrote, when the cache does not show it yet.

        This process is the only writer of a job's status while it leads, so its last write
        is never older than the cache; deriving from a stale cache would restamp conditions.
        """
        uid, written = self._written.get(ObjectKey.of(obj), ("", None))
        if written is not None and uid == obj["metadata"]["uid"]:
            return written
        return _read_status(obj)

    def _forget(self, request: Request) -> None:
        self.expectations.forget(request)
        self._written.pop(request, None)
        _metrics.remove_job_info(self._kind_name, request.namespace, request.name)


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


def _invalid(status: JobStatus) -> bool:
    failed = status.condition("Failed")
    return failed is not None and failed.reason == "InvalidSpec" and failed.status == "True"


def _is_initialized(status: JobStatus) -> bool:
    condition = status.condition("Initialized")
    return condition is not None and condition.status == "True"


def add_job_controller(
    manager: Manager,
    kind: JobKind[Any],
    *,
    namespace: str | None = None,
    max_concurrent_reconciles: int = 16,
) -> Controller:
    """Wire a controller for `kind` into `manager`: its jobs, and its children by label.

    Children informers are shared between kinds (one per resource, selecting objects that
    carry the job-name label); each kind's controller maps only its own children back.
    """
    jobs = manager.informer(kind.resource, namespace=namespace)
    children = {
        resource: manager.informer(resource, namespace=namespace, label_selector=JOB_NAME_LABEL)
        for resource in kind.child_resources
    }
    recorder = EventRecorder(manager.client, component=f"{kind.resource.plural}-controller")
    manager.add(recorder, needs_leader=False)
    reconciler = JobReconciler(
        kind=kind, client=manager.client, jobs=jobs, children=children, recorder=recorder
    )
    controller = Controller(
        kind.resource.plural, reconciler, max_concurrent_reconciles=max_concurrent_reconciles
    )
    controller.watch(jobs, predicates=[GenerationChanged()])
    for informer in children.values():
        controller.watch(informer, mapper=requests_for_owner(kind.resource))
    manager.add_controller(controller)
    return controller
