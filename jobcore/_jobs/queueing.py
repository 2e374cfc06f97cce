"""Kueue's job framework for every kind: a labelled job runs only while Kueue admits it.

A job with Kueue's queue-name label is Kueue's to admit. Each pass over such a job reads its
Workload from the cache and acts as Kueue's own job integrations do
(pkg/controller/jobframework): it creates the Workload (the job is held until then), rebuilds
it when the job's pod sets change before Kueue reserved quota, holds the job while it is not
admitted, merges the admission into its pods, stops it when Kueue evicts it and only then
gives the quota back, keeps the Workload's PodsReady condition, and, once the job ends, marks
the Workload Finished and lifts Kueue's finalizer. A held job keeps its status history: it is
paused, not ended.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Mapping
from typing import Any

import structlog

from jobcore._jobs import kueueapi as api
from jobcore._jobs import kueuepriority
from jobcore._jobs.admission import admission_conflict
from jobcore._jobs.admission import admitted_pod_sets
from jobcore._jobs.kind import Job
from jobcore._jobs.kind import JobKind
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import Outcome
from jobcore._jobs.tasks import pod_ready
from jobcore._jobs.tasks import replica_phase
from jobcore._jobs.workload import Priority
from jobcore._jobs.workload import new_workload
from jobcore._jobs.workload import pod_sets
from jobcore._jobs.workload import prebuilt_name
from jobcore._jobs.workload import queue_name
from jobcore._jobs.workload import same_pod_sets
from jobcore._jobs.workload import workload_name
from jobcore._runtime.client import Client
from jobcore._runtime.errors import AlreadyExistsError
from jobcore._runtime.errors import ConflictError
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.events import EventRecorder
from jobcore._runtime.informer import Informer
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import controller_of
from jobcore._runtime.resources import owner_reference

_log = structlog.get_logger("jobcore.kueue")

_REQUEUED_AT_ONCE = ("Preempted", "NodeFailures")
"""Eviction reasons after which Kueue requeues a Workload at once (Requeued True)."""
_READY_MESSAGE = "All pods reached readiness and the workload is running"
_NOT_READY_MESSAGE = "Not all pods are ready or succeeded"


@dataclasses.dataclass(frozen=True, slots=True)
class Queueing:
    """The Kueue integration of one kind's controller: its Workload cache and its writes."""

    client: Client
    kind: JobKind[Any]
    workloads: Informer
    recorder: EventRecorder
    min_counts: Callable[[Job[Any]], Mapping[str, int]] | None = None
    queue_of: Callable[[Object], str | None] = queue_name
    """The job's LocalQueue ("" for none yet), or None for a job Kueue does not queue."""
    _pod_sets: dict[tuple[str, str], tuple[Hashable, list[Object]]] = dataclasses.field(
        default_factory=dict, repr=False
    )
    """Each queued job's pod sets, with what they were rendered from (see `_sets`)."""

    @property
    def _group(self) -> str:
        return self.kind.resource.group

    def workload_of(self, job: Job[Any]) -> Object | None:
        """The job's Workload in the cache, if it is the job's own (owned by its uid)."""
        name = prebuilt_name(job.obj) or workload_name(job.kind, self._group, job.name, job.uid)
        workload = self.workloads.get(name, job.namespace)
        owner = controller_of(workload) if workload is not None else None
        return workload if owner is not None and owner.get("uid") == job.uid else None

    async def admit(self, job: Job[Any], observed: Observed) -> Job[Any]:
        """`job` as this pass runs it: unchanged if Kueue does not queue it (no label, not
        in `queue_of`'s scope), held while its
        Workload is not admitted (or is being made, rebuilt or given back), else with the
        admission to merge into its pods."""
        queue = self.queue_of(job.obj)
        if queue is None:
            return job
        sets = self._sets(job)
        workload = self.workload_of(job)
        prebuilt = prebuilt_name(job.obj)
        if workload is None and prebuilt is not None:
            return await self._adopt(job, prebuilt)
        if workload is None:
            return await self._create(job, queue, sets, observed)
        named = f"{job.namespace}/{workload['metadata']['name']}"
        reserved = api.is_true(workload, api.QUOTA_RESERVED)
        if not same_pod_sets(workload, sets) and prebuilt is not None:
            return await self._out_of_sync(job, workload)
        if not same_pod_sets(workload, sets):
            return await self._rebuild(job, workload, queue, sets, observed=observed)
        evicted = api.find(api.conditions(workload), api.EVICTED)
        if reserved and evicted is not None and evicted.get("status") == "True":
            return await self._give_back(job, workload, evicted, observed)
        if api.is_true(workload, api.ADMITTED):
            infos = admitted_pod_sets(workload, await self._flavors(workload))
            refused = admission_conflict(sets, infos)
            if refused is not None:  # the job fails (InvalidSpec) as its pods are planned
                await self._finish(job, workload, "FailedToStart", refused)
            elif api.is_true(workload, api.FINISHED):  # it failed to start, and was fixed
                return await self._rebuild(job, workload, queue, sets, observed=observed)
            else:
                await self._pods_ready(workload, job, observed)
            return dataclasses.replace(job, admission=infos)
        if not reserved and (workload["spec"].get("queueName") or "") != queue:
            await self._patch(workload, {"spec": {"queueName": queue or None}})
        return _held(
            job, f"Kueue has not admitted Workload {named} ({_in_queue(queue)}){_why(workload)}."
        )

    async def dispatched(self, job: Job[Any], ended: Outcome | None) -> None:
        """A job that MultiKueue runs in a worker cluster, this being its manager: its Workload
        is made here, as an external framework's must be for MultiKueue to dispatch it, given
        back when Kueue evicts it, and Finished once the status MultiKueue copies back says
        the job `ended`. Its pods and status are MultiKueue's."""
        if ended is not None:
            await self.finish(job, ended)
            return
        queue = self.queue_of(job.obj)
        workload = self.workload_of(job)
        if queue is None:
            return
        if workload is None:
            await self._create(job, queue, self._sets(job), Observed({}))
            return
        evicted = api.find(api.conditions(workload), api.EVICTED)
        if api.is_true(workload, api.QUOTA_RESERVED) and evicted and evicted["status"] == "True":
            await self._give_back(job, workload, evicted, Observed({}))

    async def finish(self, job: Job[Any], outcome: Outcome) -> None:
        """The job ended: its Workload is Finished (Kueue releases its quota) and loses
        Kueue's finalizer."""
        workload = self.workload_of(job)
        if workload is not None:
            reason = "Succeeded" if outcome.state == "succeeded" else "Failed"
            await self._finish(
                job, workload, reason, outcome.message or f"The job {reason.lower()}."
            )

    async def forget(self, namespace: str, name: str) -> None:
        """The job `namespace/name` is gone: its Workloads lose Kueue's finalizer, so that
        the garbage collector can delete them."""
        self._pod_sets.pop((namespace, name), None)
        for workload in self.workloads.list(namespace):
            owner = controller_of(workload) or {}
            if (owner.get("kind"), owner.get("name")) == (self.kind.resource.kind, name):
                await self._release(workload)

    def _sets(self, job: Job[Any]) -> list[Object]:
        """The job's pod sets, rendered again only when its spec, labels or annotations
        changed: a pass over a queued job costs what changed, not the job's size."""
        meta = job.obj.get("metadata") or {}
        generation = meta.get("generation")
        version = (
            job.uid,
            generation,
            tuple(sorted((meta.get("labels") or {}).items())),
            tuple(sorted((meta.get("annotations") or {}).items())),
        )
        known = self._pod_sets.get((job.namespace, job.name))
        if isinstance(generation, int) and known is not None and known[0] == version:
            return known[1]
        sets = pod_sets(self.kind, job, self.min_counts(job) if self.min_counts else None)
        self._pod_sets[job.namespace, job.name] = (version, sets)
        return sets

    # Steps ------------------------------------------------------------------------------

    async def _create(
        self, job: Job[Any], queue: str, sets: list[Object], observed: Observed
    ) -> Job[Any]:
        if observed.pods:  # pods from before the label: they go before the job queues
            return _held(job, "Stopping the job's pods before Kueue queues it.")
        workload = new_workload(job, self._group, queue, sets, await self._priority(job))
        named = f"{job.namespace}/{workload['metadata']['name']}"
        try:
            await self.client.create(api.WORKLOADS, workload, job.namespace)
        except AlreadyExistsError:
            pass  # made by an earlier pass that the cache has not shown yet
        else:
            self._say(job, "CreatedWorkload", f"Created Workload: {named}")
        return _held(job, f"Kueue has not admitted Workload {named} ({_in_queue(queue)}) yet.")

    async def _adopt(self, job: Job[Any], name: str) -> Job[Any]:
        """The job names a prebuilt Workload (MultiKueue's, on a worker): it becomes the job's
        own (its controller and `job-uid` label), as Kueue's job framework adopts one, unless
        another object controls it. Held until then; none is ever made for it."""
        named = f"{job.namespace}/{name}"
        try:
            workload = await self.client.get(api.WORKLOADS, name, job.namespace)
        except NotFoundError:
            return _held(job, f"Waiting for the prebuilt Workload {named}.")
        owner = controller_of(workload)
        if owner is not None and owner.get("uid") != job.uid:
            theirs = f"{owner.get('kind')} {owner.get('name')}"
            return _held(job, f"The prebuilt Workload {named} belongs to {theirs}.")
        owners = workload["metadata"].get("ownerReferences") or []
        meta = {
            "ownerReferences": [*owners, owner_reference(job.obj)],
            "labels": {api.JOB_UID_LABEL: job.uid},
            "resourceVersion": _version(workload),
        }
        await self._patch(workload, {"metadata": meta})
        return _held(job, f"Kueue has not admitted the prebuilt Workload {named}.")

    async def _out_of_sync(self, job: Job[Any], workload: Object) -> Job[Any]:
        """The prebuilt Workload asks for other pods than the job's: Kueue's job framework
        marks it Finished (OutOfSync) and the job does not run."""
        message = "The prebuilt workload is out of sync with its user job"
        await self._mark_finished(workload, "OutOfSync", message)
        named = f"{job.namespace}/{workload['metadata']['name']}"
        return _held(job, f"{message} (Workload {named}): the job does not run.")

    async def _rebuild(
        self, job: Job[Any], workload: Object, queue: str, sets: list[Object], *, observed: Observed
    ) -> Job[Any]:
        """The job's pod sets changed: a Workload without quota is updated in place; one with
        quota is deleted once the job's pods are gone, and made again on the next pass."""
        named = f"{job.namespace}/{workload['metadata']['name']}"
        if not api.is_true(workload, api.QUOTA_RESERVED):
            await self._patch(workload, {"spec": {"podSets": sets, "queueName": queue or None}})
            self._say(
                job, "UpdatedWorkload", f"Updated not matching Workload for suspended job: {named}"
            )
            return _held(job, f"Kueue has not admitted Workload {named} ({_in_queue(queue)}).")
        if observed.pods:
            return _held(
                job, f"The job's pods changed: stopping it to queue Workload {named} again."
            )
        await self._release(workload)
        with contextlib.suppress(NotFoundError):
            await self.client.delete(api.WORKLOADS, workload["metadata"]["name"], job.namespace)
        self._say(job, "DeletedWorkload", f"Deleted Workload: {named}")
        return _held(job, "The job's pods changed: queueing it again.")

    async def _give_back(
        self, job: Job[Any], workload: Object, evicted: Object, observed: Observed
    ) -> Job[Any]:
        """Kueue evicted the job: its pods are stopped, then the quota reservation cleared, in
        one status write, as Kueue's job framework does."""
        message = str(evicted.get("message") or "The Workload was evicted.")
        if observed.pods:
            return _held(job, f"Kueue evicted the job: {message} Stopping its pods.")
        reason = str(evicted.get("reason") or "Evicted")
        items = api.conditions(workload)
        api.set_condition(items, api.REQUEUED, reason in _REQUEUED_AT_ONCE, reason, message)
        api.set_condition(items, api.QUOTA_RESERVED, False, api.PENDING, message)
        api.set_condition(
            items, api.ADMITTED, False, "NoReservation", "The workload has no reservation"
        )
        patch = {"status": {"conditions": items, "admission": None}}
        await self._patch(workload, patch, status=True)
        self._say(job, "Stopped", message)
        return _held(job, f"Kueue evicted the job: {message}")

    async def _pods_ready(self, workload: Object, job: Job[Any], observed: Observed) -> None:
        """Tell Kueue (its waitForPodsReady) whether every admitted pod is Ready or done."""
        expected = sum(int(s.get("count") or 0) for s in workload["spec"].get("podSets") or ())
        pods = observed.pods.values()
        ready = sum(1 for pod in pods if pod_ready(pod) or replica_phase(pod) == "Succeeded")
        before = api.find(api.conditions(workload), api.PODS_READY)
        if ready >= expected > 0:
            was_down = before is not None and before.get("reason") == "WaitForRecovery"
            state = (True, "Recovered" if was_down else "Started", _READY_MESSAGE)
        elif before is not None and before.get("status") == "True":
            state = (False, "WaitForRecovery", "At least one pod has failed, waiting for recovery")
        elif before is not None and before.get("reason") == "WaitForRecovery":
            return
        else:
            state = (False, api.WAIT_FOR_START, _NOT_READY_MESSAGE)
        if (
            before is not None
            and (before.get("status") == "True", before.get("reason")) == state[:2]
        ):
            return
        items = api.conditions(workload)
        api.set_condition(items, api.PODS_READY, *state)
        await self._patch(workload, {"status": {"conditions": items}}, status=True)

    async def _flavors(self, workload: Object) -> dict[str, Object]:
        """The ResourceFlavors the admission names, read from the API server (one each)."""
        admission = (workload.get("status") or {}).get("admission") or {}
        names = {
            str(name)
            for assignment in admission.get("podSetAssignments") or ()
            for name in (assignment.get("flavors") or {}).values()
        }
        flavors = {}
        for name in sorted(names):
            try:
                flavors[name] = await self.client.get(api.RESOURCE_FLAVORS, name)
            except NotFoundError:
                _log.warning("an admitted flavour is gone", flavor=name)
        return flavors

    async def _priority(self, job: Job[Any]) -> Priority:
        """The priority Kueue's job framework gives the job's Workload (`kueuepriority`). A
        class it names that does not exist is said in a Warning Event, and the pass fails,
        to be retried, as in Kueue: no Workload until the class exists."""
        try:
            return await kueuepriority.resolve(self.client, job.obj, self._sets(job))
        except NotFoundError as missing:
            message = f"Kueue's Workload waits for a priority class: {missing.message}"
            self.recorder.emit(
                job.obj, type="Warning", reason="PriorityClassNotFound", message=message
            )
            raise

    async def _finish(self, job: Job[Any], workload: Object, reason: str, message: str) -> None:
        """The Workload Finished (`reason`: Succeeded, Failed, or FailedToStart when its
        admission cannot be merged into the pods), without Kueue's finalizer."""
        if await self._mark_finished(workload, reason, message):
            named = f"{job.namespace}/{workload['metadata']['name']}"
            self._say(job, "FinishedWorkload", f"Workload '{named}' is declared finished")
        await self._release(workload)

    async def _mark_finished(self, workload: Object, reason: str, message: str) -> bool:
        """The Workload's Finished condition set True, unless it is already; whether it was
        set now."""
        if api.is_true(workload, api.FINISHED):
            return False
        items = api.conditions(workload)
        api.set_condition(items, api.FINISHED, True, reason, message)
        await self._patch(workload, {"status": {"conditions": items}}, status=True)
        return True

    def _say(self, job: Job[Any], reason: str, message: str) -> None:
        """A Normal Event on the job, as Kueue's job framework records it on its jobs."""
        self.recorder.emit(job.obj, type="Normal", reason=reason, message=message)

    async def _release(self, workload: Object) -> None:
        finalizers = workload["metadata"].get("finalizers") or []
        if api.RESOURCE_IN_USE_FINALIZER not in finalizers:
            return
        kept = [f for f in finalizers if f != api.RESOURCE_IN_USE_FINALIZER]
        patch = {"metadata": {"finalizers": kept, "resourceVersion": _version(workload)}}
        await self._patch(workload, patch)

    async def _patch(self, workload: Object, patch: Object, *, status: bool = False) -> None:
        meta = workload["metadata"]
        if status:
            patch = {**patch, "metadata": {"resourceVersion": _version(workload)}}
        # Gone: nothing is left to tell Kueue. Changed since the cache's copy (a conflict):
        # its event brings the job back, to decide again from the Workload as it is now.
        with contextlib.suppress(NotFoundError, ConflictError):
            await self.client.patch(
                api.WORKLOADS,
                meta["name"],
                patch,
                meta["namespace"],
                subresource="status" if status else None,
            )


async def kueue_served(client: Client) -> bool:
    """Whether the API server serves Kueue's Workloads (in the version jobcore writes), by
    discovery, which every authenticated user may read."""
    try:
        found = await client.request("GET", f"/apis/{api.GROUP}/{api.VERSION}")
    except NotFoundError:
        return False
    return any(r.get("name") == api.WORKLOADS.plural for r in found.get("resources") or ())


def _why(workload: Object) -> str:
    """What Kueue says the Workload waits for: quota (QuotaReserved's message) or, once it
    holds quota, its admission checks (Admitted's message, and each check not Ready)."""
    reserved = api.is_true(workload, api.QUOTA_RESERVED)
    found = api.find(api.conditions(workload), api.ADMITTED if reserved else api.QUOTA_RESERVED)
    why = f": {found['message']}" if found and found.get("message") else ""
    checks = (workload.get("status") or {}).get("admissionChecks") or () if reserved else ()
    waiting = [f"{c.get('name')} {c.get('state')}" for c in checks if c.get("state") != "Ready"]
    return why + (f" ({', '.join(waiting)})" if waiting else "")


def _in_queue(queue: str) -> str:
    return f"LocalQueue {queue}" if queue else "in no LocalQueue"


def _held(job: Job[Any], why: str) -> Job[Any]:
    return dataclasses.replace(job, held=why)


def _version(workload: Object) -> str:
    return str(workload["metadata"].get("resourceVersion") or "")
