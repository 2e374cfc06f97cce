"""The children of one kind's jobs: read from the shared caches, created, updated, deleted.

The job layer's only writer of children. Creations and deletions are recorded in the
reconciler's `Expectations` before they are sent, so a cache that has not shown them yet never
makes the reconciler send them twice; an `ExpectationObserver` on every child cache confirms
them as the cache shows them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Generic

from jobcore._jobs.cached import MAX_CHILD_BYTES
from jobcore._jobs.cached import digests
from jobcore._jobs.cached import oversized
from jobcore._jobs.childmap import ExpectationObserver
from jobcore._jobs.childmap import child_mapper
from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import Job
from jobcore._jobs.kind import JobKind
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import SpecT
from jobcore._jobs.plan import adopt
from jobcore._jobs.podstate import pod_ended
from jobcore._jobs.podstate import pod_stopped
from jobcore._jobs.scheduling import GangScheduler
from jobcore._runtime.client import Client
from jobcore._runtime.errors import AlreadyExistsError
from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import ConflictError
from jobcore._runtime.errors import ForbiddenError
from jobcore._runtime.errors import JobcoreError
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.errors import TerminalError
from jobcore._runtime.expectations import Expectations
from jobcore._runtime.handler import Request
from jobcore._runtime.informer import Informer
from jobcore._runtime.resources import BATCH_JOBS
from jobcore._runtime.resources import CONFIGMAPS
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore._runtime.resources import Resource
from jobcore._runtime.resources import controller_of
from jobcore._runtime.resources import run_by_batch_job

RECHECK_SECONDS = 30.0
"""How often a job waits again for a PodGroup CRD that is not installed, or for a PodGroup of
its name that is another's to go."""
_WORKLOADS = (PODS.kind, BATCH_JOBS.kind)
"""Children that run pods: created only once every other child was."""
_JOB_FINISHED = ("Complete", "Failed")
"""The conditions of a batch Job its Job controller is done with."""
_PREDECESSOR = "the job's predecessor"
CREATIONS_AT_ONCE = 64
"""A job's creations in flight at once: a wide job's thousand Pods are sent as answers come
back, so that serializing them never holds the event loop for long."""


@dataclasses.dataclass(slots=True)
class Creation:
    """What one pass created, and what the API server forbade it to create (with why)."""

    created: list[Object] = dataclasses.field(default_factory=list)
    refused: list[tuple[Object, ForbiddenError]] = dataclasses.field(default_factory=list)


class ChildRefused(TerminalError):
    """The API server refused a child for good: the job is invalid as it stands."""

    def __init__(self, error: FieldError) -> None:
        super().__init__(str(error))
        self.error = error


class JobChildren(Generic[SpecT]):
    """Creates, updates and deletes the children of `kind`'s jobs, and reads them from the
    shared child caches (by the controller-uid index)."""

    def __init__(
        self,
        kind: JobKind[SpecT],
        client: Client,
        informers: Mapping[Resource, Informer],
        expectations: Expectations,
    ) -> None:
        self.kind = kind
        self.client = client
        self.informers = informers
        self.expectations = expectations
        # The last PodGroup applied per job (by uid): applied again only when it changes.
        self._pod_groups: dict[ObjectKey, tuple[str, Object]] = {}
        self._kind_name = kind.resource.kind
        observer = ExpectationObserver(expectations, child_mapper(kind.resource, informers))
        for informer in informers.values():
            informer.add_handler(observer)

    def observe(self, namespace: str, uid: str) -> Observed:
        """The job's children as the caches show them now: objects in the job's `namespace`
        that it controls (one elsewhere naming its uid is nobody's child); its pods include
        those of the batch Jobs it controls (a launcher run by Kubernetes' Job controller).
        A child too large to be one the controller made is not among them: creating one of
        its name is refused (`_check_owner`)."""
        children = {
            resource: _by_name(informer.controlled_by(namespace, uid))
            for resource, informer in self.informers.items()
        }
        if (pods := children.get(PODS)) is not None:
            for batch_job in children.get(BATCH_JOBS, {}).values():
                run = self.informers[PODS].controlled_by(namespace, batch_job["metadata"]["uid"])
                pods.update(_by_name(run))
        return Observed(children)

    async def create_missing(
        self, request: Request, job: Job[SpecT], desired: Sequence[Object], observed: Observed
    ) -> Creation:
        """Create what is missing: the other children first, then the workloads (Pods and
        batch Jobs), which mount or read them.

        Children the API server forbids (a quota, a LimitRange, admission) are returned as
        refused, and no workload is created while another child is refused; a child it finds
        invalid, or one that exists and is not this job's, raises `ChildRefused`; any other
        failure raises. At most CREATIONS_AT_ONCE creations are in flight.
        """
        resources = {resource.kind: resource for resource in self.kind.child_resources}
        missing = [
            o for o in desired if observed.get(resources[o["kind"]], o["metadata"]["name"]) is None
        ]
        creation = Creation()
        in_flight = asyncio.Semaphore(CREATIONS_AT_ONCE)

        async def create(obj: Object) -> None:
            async with in_flight:
                await self._create(request, job, resources[obj["kind"]], obj)

        for wave in (
            [o for o in missing if o["kind"] not in _WORKLOADS],
            [o for o in missing if o["kind"] in _WORKLOADS],
        ):
            if not wave or creation.refused:
                continue
            self.expectations.expect_creations(request, [o["metadata"]["name"] for o in wave])
            results = await asyncio.gather(*map(create, wave), return_exceptions=True)
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
            # Client.create, without decoding the answer: a Pod's can be hundreds of KB.
            await self.client.request("POST", resource.path(job.namespace), body=obj, decode=False)
        except AlreadyExistsError:
            self.expectations.creation_observed(request, meta["name"])
            await self._check_owner(job, resource, meta["name"])
        except ApiError as error:
            self.expectations.creation_observed(request, meta["name"])  # never coming
            if error.status in (400, 422):
                message = f"the API server refused {resource.kind} {meta['name']}: {error}"
                raise ChildRefused(FieldError("spec", message)) from error
            raise
        except Exception:
            self.expectations.creation_observed(request, meta["name"])  # never coming
            raise

    async def _check_owner(self, job: Job[SpecT], resource: Resource, name: str) -> None:
        """A child that exists already must be this job's: another's (a job of another kind
        with the same name wants the same children) is a conflict only a rename resolves, and
        so is one of the job's own that is too large to be one the controller made."""
        cached = self.informers[resource].get(name, job.namespace)
        if cached is not None and (size := oversized(cached)) is not None:
            message = (
                f"{resource.kind} {name} exists and is {size:,} bytes as JSON, more than any "
                f"the controller makes ({MAX_CHILD_BYTES:,}): it is not read; delete it, or "
                f"give this {self._kind_name} another name"
            )
            raise ChildRefused(FieldError("metadata.name", message))
        existing = await self.client.get(resource, name, job.namespace)
        if (held := self._held_by(job, existing)) is None:
            return
        if held == _PREDECESSOR:
            # A job deleted and created again: its old children go with the garbage collector.
            raise JobcoreError(f"{resource.kind} {name} still belongs to the job's predecessor")
        message = (
            f"{resource.kind} {name} already exists and belongs to {held}: give this "
            f"{self._kind_name} another name"
        )
        raise ChildRefused(FieldError("metadata.name", message))

    def _held_by(self, job: Job[SpecT], existing: Object) -> str | None:
        """Who controls `existing` if not `job`: `_PREDECESSOR` (a deleted job of the same
        kind and name), another owner by kind, name and group, or "no owner"."""
        owner = controller_of(existing)
        if owner is not None and owner.get("uid") == job.uid:
            return None
        if owner is None:
            return "no owner"
        if (owner.get("apiVersion"), owner.get("kind"), owner.get("name")) == (
            self.kind.resource.api_version,
            self._kind_name,
            job.name,
        ):
            return _PREDECESSOR
        return f"{owner.get('kind')} {owner.get('name')} ({owner.get('apiVersion')})"

    async def update_config(self, desired: Sequence[Object], observed: Observed) -> bool:
        """Bring existing ConfigMaps' data up to date (e.g. a hostfile after a scale change),
        compared by digest, as the cache holds them; False if one changed since the cache
        showed it (the cache will show the change).

        Other children are only ever created: a Pod cannot change, and a Secret such as an
        ssh key must stay what the running job was given.
        """
        for obj in desired:
            if obj["kind"] != CONFIGMAPS.kind:
                continue
            current = observed.get(CONFIGMAPS, obj["metadata"]["name"])
            # The cache holds digests of a ConfigMap's values (jobcore._jobs.cached).
            if current is not None and (current.get("data") or {}) != digests(
                obj.get("data") or {}
            ):
                meta = current["metadata"]
                # A merge patch would keep keys the new data drops; replace the whole map.
                # "add" sets /data whether or not someone removed it. The resourceVersion the
                # data was read at makes the server refuse (409) a patch over a newer one.
                patch = [
                    {
                        "op": "replace",
                        "path": "/metadata/resourceVersion",
                        "value": meta["resourceVersion"],
                    },
                    {"op": "add", "path": "/data", "value": obj.get("data") or {}},
                ]
                try:
                    await self.client.patch(
                        CONFIGMAPS, meta["name"], patch, meta["namespace"], patch_type="json"
                    )
                except ConflictError:
                    return False
        return True

    async def delete_pods(
        self, request: Request, observed: Observed, keep: set[str]
    ) -> list[Object]:
        """Delete the owned Pods not in `keep` (gracefully); those it sent deletions for.

        The pods of the job's batch Jobs are their Job controller's to delete, never these.
        """
        pods = {name: pod for name, pod in observed.pods.items() if not run_by_batch_job(pod)}
        return await self._delete(request, PODS, pods, keep)

    async def delete_leftover_pods(
        self, request: Request, observed: Observed, doomed: set[str]
    ) -> list[Object]:
        """Delete the `doomed` pods that finished batch Jobs of the job left unfinished; those
        it sent deletions for. A finished Job's controller stops no pod, and Kubernetes 1.20's
        can leave one running when it fails a Job: for a job that ended, `delete_pods` leaves
        them to that controller, so the job's clean-up takes them."""
        batch_jobs = observed.children.get(BATCH_JOBS, {})
        leftovers = {
            name: pod
            for name, pod in observed.pods.items()
            if name in doomed and _run_by_finished(pod, batch_jobs) and not pod_ended(pod)
        }
        return await self._delete(request, PODS, leftovers, keep=set())

    async def remove_stopped(self, request: Request, uid: str) -> None:
        """Remove from the API server, at once, the pods this job's deletions wait for whose
        containers have all stopped.

        The kubelet stops a deleted pod's containers within its grace period, but removes the
        pod only once it has cleaned up after it, on a sync of its own (10 s after the
        containers stopped in docs/operations.md's run), and a pause or a restart waits for
        the pods to be gone. The program had its grace period; what is left is the kubelet's,
        which it finishes with the pod gone. Pods of batch Jobs stay their Job controller's.
        """
        awaited = self.expectations.pending_deletions(request)
        stopped = [
            pod
            for name, pod in self.observe(request.namespace, uid).pods.items()
            if name in awaited
            and pod["metadata"].get("deletionTimestamp")
            and pod_stopped(pod)
            and not run_by_batch_job(pod)
        ]
        for pod in stopped:
            meta = pod["metadata"]
            with contextlib.suppress(NotFoundError, ConflictError):
                await self.client.delete(
                    PODS, meta["name"], meta["namespace"], grace_period_seconds=0, uid=meta["uid"]
                )

    async def delete_batch_jobs(
        self, request: Request, observed: Observed, keep: set[str]
    ) -> list[Object]:
        """Delete the job's batch Jobs not in `keep`, their pods with them (in the background)."""
        return await self._delete(request, BATCH_JOBS, observed.children.get(BATCH_JOBS, {}), keep)

    async def _delete(
        self, request: Request, resource: Resource, owned: Mapping[str, Object], keep: set[str]
    ) -> list[Object]:
        doomed = [
            obj
            for name, obj in owned.items()
            if name not in keep and not obj["metadata"].get("deletionTimestamp")
        ]
        if not doomed:
            return []
        self.expectations.expect_deletions(request, [o["metadata"]["name"] for o in doomed])
        for i, obj in enumerate(doomed):
            meta = obj["metadata"]
            try:
                await self.client.delete(resource, meta["name"], meta["namespace"], uid=meta["uid"])
            except NotFoundError:
                self.expectations.deletion_observed(request, meta["name"])
            except Exception:
                # This deletion and those not sent are never coming: the next pass retries.
                for unsent in doomed[i:]:
                    self.expectations.deletion_observed(request, unsent["metadata"]["name"])
                raise
        return doomed

    async def apply_pod_group(
        self, job: Job[SpecT], scheduler: GangScheduler, group: Object
    ) -> str | None:
        """Create or update the job's PodGroup before its pods; why not, if its CRD is missing
        or a PodGroup of that name is not the job's (it is never applied over).

        Applied again only when it changed since this process last applied it.
        """
        key = ObjectKey(job.namespace, job.name)
        if self._pod_groups.get(key) == (job.uid, group):
            return None
        resource = scheduler.resource
        recheck = f"the controller checks again every {RECHECK_SECONDS:.0f} s."
        try:
            existing = await self.client.get(resource, job.name, job.namespace)
        except NotFoundError:
            existing = None  # or its CRD is missing: the apply says which
        # A predecessor's (same kind and name) is taken over, as before the garbage collector
        # gets to it; anyone else's is left alone.
        held = self._held_by(job, existing) if existing is not None else None
        if held is not None and held != _PREDECESSOR:
            return (
                f"{resource.kind} {job.name} ({resource.api_version}) already exists and "
                f"belongs to {held}: give this {self._kind_name} another name, or delete that "
                f"{resource.kind}; {recheck}"
            )
        body = group
        if existing is not None:
            # Over the PodGroup just read only: a conflict (409) retries the reconcile.
            version = existing["metadata"]["resourceVersion"]
            body = {**group, "metadata": {**group["metadata"], "resourceVersion": version}}
        try:
            await self.client.apply(resource, body, force=True)
        except NotFoundError:
            return (
                f"{resource.kind} {resource.api_version} is not installed in the cluster: "
                f"install its scheduler or take the job off it (spec.scheduler, or the "
                f"controller's --gang-scheduler); {recheck}"
            )
        self._pod_groups[key] = (job.uid, group)
        return None

    def forget(self, key: ObjectKey) -> None:
        self._pod_groups.pop(key, None)


def _run_by_finished(pod: Object, batch_jobs: Mapping[str, Object]) -> bool:
    """Whether a batch Job of the job runs `pod` and has finished (Complete or Failed)."""
    ref = controller_of(pod) if run_by_batch_job(pod) else None
    batch_job = batch_jobs.get(ref["name"]) if ref else None
    if ref is None or batch_job is None or batch_job["metadata"].get("uid") != ref.get("uid"):
        return False
    conditions = (batch_job.get("status") or {}).get("conditions") or ()
    return any(c.get("type") in _JOB_FINISHED and c.get("status") == "True" for c in conditions)


def _by_name(objects: Iterable[Object]) -> dict[str, Object]:
    """`objects` by name, but for those cached as their metadata only (`oversized`)."""
    return {o["metadata"]["name"]: o for o in objects if oversized(o) is None}
