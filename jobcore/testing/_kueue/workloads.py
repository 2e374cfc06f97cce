"""The stand-in's workload controller: what Kueue does to one Workload besides scheduling.

As pkg/controller/core/workload_controller.go: the finalizer of an orphan, deactivation,
the waitForPodsReady timeout, the requeue after a backoff, the QuotaReserved condition
of a Workload whose queues cannot admit it, and its admission checks' states and Admitted
condition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jobcore._runtime.client import Client
from jobcore._runtime.controller import Result
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.handler import Request
from jobcore._runtime.resources import Object
from jobcore.testing._kueue import api
from jobcore.testing._kueue import transitions
from jobcore.testing._kueue.cluster import Assumed
from jobcore.testing._kueue.cluster import Snapshot
from jobcore.testing._kueue.cluster import editable
from jobcore.testing._kueue.cluster import required_checks
from jobcore.testing._kueue.cluster import write
from jobcore.testing._kueue.cluster import write_status


@dataclass(frozen=True, slots=True)
class WaitForPodsReady:
    """Kueue's `waitForPodsReady` configuration, in seconds.

    An admitted Workload whose PodsReady condition is not True `timeout` seconds after its
    admission is evicted (reason PodsReadyTimeout) and requeued after `backoff_base` *
    2^(n-1) seconds at the n-th time, at most `backoff_max`; past `backoff_limit` requeues
    (None: no limit) it is deactivated instead. Kueue's defaults: 300, 60, 3600, None.
    """

    timeout: float = 300.0
    backoff_base: float = 60.0
    backoff_max: float = 3600.0
    backoff_limit: int | None = None


class WorkloadController:
    """Reconciles one Workload (a `Request` of its namespace and name)."""

    def __init__(
        self,
        client: Client,
        assumed: Assumed,
        snapshot: Callable[[], Snapshot],
        *,
        wait_for_pods_ready: WaitForPodsReady | None,
    ) -> None:
        self._client = client
        self._assumed = assumed
        self._snapshot = snapshot
        self._wait = wait_for_pods_ready

    async def reconcile(self, request: Request) -> Result:
        snapshot = self._snapshot()
        found = [
            w for w in snapshot.workloads if api.key(w) == f"{request.namespace}/{request.name}"
        ]
        if not found:
            self._assumed.forget(f"{request.namespace}/{request.name}")
            return Result()
        workload = found[0]
        try:
            return await self._reconcile(snapshot, workload)
        except NotFoundError:
            return Result()

    async def _reconcile(self, snapshot: Snapshot, workload: Object) -> Result:
        meta = workload["metadata"]
        if not meta.get("ownerReferences") and (
            meta.get("deletionTimestamp") or (meta.get("labels") or {}).get(api.JOB_UID_LABEL)
        ):
            return await self._orphan(workload)
        if api.is_true(workload, api.FINISHED):
            return Result()
        if not api.is_active(workload):
            return await self._deactivate(workload)
        if api.is_true(workload, "DeactivationTarget"):
            changed = editable(workload)
            changed["spec"]["active"] = False
            await write(self._client, self._assumed, workload, changed)
            return Result()
        requeued = api.find(api.conditions(workload), api.REQUEUED)
        if requeued is not None and requeued.get("status") == "False":
            return await self._requeue(workload, requeued)
        blocker = snapshot.blocker(workload)
        if blocker is not None and not api.is_true(workload, api.QUOTA_RESERVED):
            changed = editable(workload)
            if transitions.unreserve(changed, api.INADMISSIBLE, blocker):
                await write_status(self._client, self._assumed, workload, changed)
            return Result()
        cluster_queue = snapshot.cluster_queues.get(snapshot.cluster_queue_name(workload) or "")
        changed = editable(workload)
        if (
            cluster_queue is not None
            and transitions.sync_checks(changed, required_checks(workload, cluster_queue))
        ) or (not api.is_true(workload, api.ADMITTED) and transitions.sync_admitted(changed)):
            await write_status(self._client, self._assumed, workload, changed)
            return Result()
        return await self._pods_ready_timeout(workload)

    async def _orphan(self, workload: Object) -> Result:
        """FinalizeOrphanedWorkload: a Workload without owner whose job is gone (it keeps the
        job-uid label) is Finished (OwnerNotFound); either way Kueue's finalizer goes."""
        if not workload["metadata"].get("deletionTimestamp") and not api.is_true(
            workload, api.FINISHED
        ):
            changed = editable(workload)
            transitions.finish(changed, "OwnerNotFound", "The workload's owner no longer exists")
            workload = await write_status(self._client, self._assumed, workload, changed)
        finalizers = list(workload["metadata"].get("finalizers") or [])
        if api.RESOURCE_IN_USE_FINALIZER in finalizers:
            changed = editable(workload)
            finalizers.remove(api.RESOURCE_IN_USE_FINALIZER)
            changed["metadata"]["finalizers"] = finalizers
            await write(self._client, self._assumed, workload, changed)
        return Result()

    async def _deactivate(self, workload: Object) -> Result:
        """spec.active false: evicted (Deactivated, or DeactivatedDueTo<cause> when a
        DeactivationTarget condition said why), the requeue state cleared."""
        status = workload.get("status") or {}
        if api.is_true(workload, api.EVICTED) and status.get("requeueState") is None:
            return Result()
        changed = editable(workload)
        changed.setdefault("status", {}).pop("requeueState", None)
        if not api.is_true(workload, api.EVICTED):
            items = api.conditions(changed)
            target = api.find(items, "DeactivationTarget")
            message, cause = "The workload is deactivated", ""
            if target is not None:
                cause = str(target.get("reason", ""))
                message = f"{message} due to {target.get('message', '')}"
                changed["status"]["conditions"] = [c for c in items if c is not target]
            transitions.evict(changed, api.DEACTIVATED, message, cause=cause)
        await write_status(self._client, self._assumed, workload, changed)
        return Result()

    async def _requeue(self, workload: Object, requeued: Object) -> Result:
        """Requeued False: a reactivated Workload is requeued at once (Reactivated); one
        evicted by a PodsReady timeout when its backoff ends (BackoffFinished)."""
        changed = editable(workload)
        if requeued.get("reason", "").startswith(api.DEACTIVATED):
            transitions.set_requeued(changed, api.REACTIVATED, "The workload was reactivated", True)
            changed["status"].pop("requeueState", None)
        elif requeued.get("reason") == api.EVICTED_BY_PODS_READY_TIMEOUT:
            state = changed["status"].get("requeueState") or {}
            at = state.get("requeueAt")
            if at:
                wait = -api.seconds_since(at)
                if wait > 0:
                    return Result(requeue_after=wait)
                state.pop("requeueAt")
            transitions.set_requeued(
                changed, api.BACKOFF_FINISHED, "The workload backoff was finished", True
            )
        else:
            return Result()
        await write_status(self._client, self._assumed, workload, changed)
        return Result()

    async def _pods_ready_timeout(self, workload: Object) -> Result:
        """reconcileNotReadyTimeout: an admitted Workload not PodsReady `timeout` seconds
        after its admission is evicted (PodsReadyTimeout), its requeue state counted."""
        if self._wait is None or api.is_true(workload, api.EVICTED):
            return Result()
        items = api.conditions(workload)
        admitted = api.find(items, api.ADMITTED)
        if admitted is None or admitted.get("status") != "True":
            return Result()
        ready = api.find(items, api.PODS_READY)
        if ready is not None and (
            ready.get("status") == "True"
            or ready.get("reason") not in (api.WAIT_FOR_START, "PodsReady")
        ):
            return Result()
        remaining = self._wait.timeout - api.seconds_since(admitted["lastTransitionTime"])
        if remaining > 0:
            return Result(requeue_after=remaining)
        count = int(((workload.get("status") or {}).get("requeueState") or {}).get("count") or 0)
        changed = editable(workload)
        if self._wait.backoff_limit is not None and count + 1 > self._wait.backoff_limit:
            api.set_condition(
                changed["status"]["conditions"],
                "DeactivationTarget",
                True,
                "RequeuingLimitExceeded",
                "exceeding the maximum number of re-queuing retries",
            )
        else:
            transitions.requeue_state(
                changed, base=self._wait.backoff_base, limit=self._wait.backoff_max
            )
            name = f"{workload['metadata'].get('namespace')}/{workload['metadata']['name']}"
            transitions.evict(
                changed, api.EVICTED_BY_PODS_READY_TIMEOUT, f"Exceeded the PodsReady timeout {name}"
            )
        await write_status(self._client, self._assumed, workload, changed)
        return Result()
