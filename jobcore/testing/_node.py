"""A simulated node: plays scheduler and kubelet for Pods on an API server that has neither."""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from jobcore._client import Client
from jobcore._errors import ApiError, NotFoundError
from jobcore._informer import Informer
from jobcore._labels import parse_selector
from jobcore._queue import QueueShutDown, WorkQueue
from jobcore._resources import NODES, PODS, Object, ObjectKey

PodMatcher = Callable[[Object], bool]
_log = structlog.get_logger("jobcore.testing.node")
_FINAL_PHASES = ("Succeeded", "Failed")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class PodOutcome:
    """How a running Pod's containers end: exit code, termination reason, and when."""

    exit_code: int = 0
    reason: str | None = None
    after: float = 0.0

    @property
    def termination_reason(self) -> str:
        return self.reason or ("Completed" if self.exit_code == 0 else "Error")


def _matcher(selector: str | PodMatcher) -> PodMatcher:
    if callable(selector):
        return selector
    matches = parse_selector(selector)
    return lambda pod: matches(pod["metadata"].get("labels") or {})


def _condition(kind: str, status: bool, reason: str | None = None) -> dict[str, Any]:
    condition = {
        "type": kind,
        "status": "True" if status else "False",
        "lastTransitionTime": _now(),
    }
    if reason:
        condition["reason"] = reason
    return condition


class SimulatedNode:
    """Binds unscheduled Pods to itself and writes their status as a kubelet would.

    Bound Pods become Running and Ready (after `ready_after` seconds); `when` rules end
    matching Pods with an exit code and reason; `succeed`, `fail`, `evict`, `set_waiting`
    and `set_ready` drive one Pod by hand. Deleted Pods are finalised (the API server waits
    for the kubelet before removing a bound Pod). Scope it to a namespace so that several
    nodes can share one API server.
    """

    def __init__(
        self,
        client: Client,
        *,
        name: str = "jobcore-simulated-node",
        namespace: str | None = None,
        ready_after: float = 0.0,
        workers: int = 16,
        register: bool = True,
    ) -> None:
        self.client = client
        self.name = name
        self.namespace = namespace
        self.ready_after = ready_after
        self.pods = Informer(client, PODS, namespace=namespace)
        self._rules: list[tuple[PodMatcher, PodOutcome]] = []
        self._queue: WorkQueue[ObjectKey] = WorkQueue()
        self._workers = workers
        self._register = register
        self._started: set[ObjectKey] = set()
        self._scheduled_ends: set[ObjectKey] = set()
        self._ips = (f"10.244.{i // 250}.{i % 250 + 2}" for i in itertools.count())
        self._tasks: set[asyncio.Task[Any]] = set()
        self.pods.add_handler(self)

    # Informer events: everything funnels into the queue so one Pod is handled at a time.

    def on_add(self, obj: Object) -> None:
        self._queue.add(ObjectKey.of(obj))

    def on_update(self, old: Object, new: Object) -> None:
        self._queue.add(ObjectKey.of(new))

    def on_delete(self, obj: Object) -> None:
        key = ObjectKey.of(obj)
        self._started.discard(key)
        self._scheduled_ends.discard(key)

    def when(
        self,
        selector: str | PodMatcher,
        *,
        exit_code: int = 0,
        reason: str | None = None,
        after: float = 0.0,
    ) -> None:
        """End running Pods that match `selector` (labels or a function) after `after` seconds."""
        self._rules.append((_matcher(selector), PodOutcome(exit_code, reason, after)))

    async def run(self) -> None:
        if self._register:
            await self._register_node()
        informer = asyncio.create_task(self.pods.run())
        try:
            await self.pods.wait_for_sync()
            async with asyncio.TaskGroup() as group:
                for _ in range(self._workers):
                    group.create_task(self._worker())
        finally:
            for task in [informer, *self._tasks]:
                task.cancel()
            await self._queue.shutdown(drain=False)

    async def _register_node(self) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": {"jobcore.dev/simulated": "true"}},
        }
        try:
            await self.client.create(NODES, node)
        except ApiError as exc:
            if exc.status != 409:
                raise

    async def _worker(self) -> None:
        while True:
            try:
                key = await self._queue.get()
            except QueueShutDown:
                return
            try:
                await self._handle(key)
            except NotFoundError:
                pass
            except ApiError as exc:
                _log.warning("simulated kubelet failed, retrying", pod=str(key), error=str(exc))
                self._queue.add_rate_limited(key)
            finally:
                self._queue.done(key)

    async def _handle(self, key: ObjectKey) -> None:
        pod = self.pods.get(key.name, key.namespace)
        if pod is None:
            return
        spec, status = pod["spec"], pod.get("status") or {}
        node_name = spec.get("nodeName")
        if node_name and node_name != self.name:
            return  # another node's pod
        if pod["metadata"].get("deletionTimestamp"):
            if node_name:  # the API server waits for the kubelet to confirm a bound pod is gone
                await self.client.delete(
                    PODS,
                    key.name,
                    key.namespace,
                    grace_period_seconds=0,
                    uid=pod["metadata"]["uid"],
                )
        elif not node_name:
            await self._bind(pod)
        elif status.get("phase") in _FINAL_PHASES:
            return
        elif key not in self._started:
            self._started.add(key)
            await self._start(pod)
        elif key not in self._scheduled_ends:
            for matches, outcome in self._rules:
                if matches(pod):
                    self._scheduled_ends.add(key)
                    self._spawn(
                        outcome.after,
                        functools.partial(self.terminate, key.namespace, key.name, outcome),
                    )
                    break

    def _spawn(self, delay: float, action: Callable[[], Awaitable[Object]]) -> None:
        """Run `action()` after `delay` seconds without holding up a worker."""

        async def later() -> None:
            await asyncio.sleep(delay)
            try:
                await action()
            except ApiError as exc:
                _log.debug("simulated kubelet action failed", error=str(exc))

        task = asyncio.create_task(later())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _bind(self, pod: Object) -> None:
        meta = pod["metadata"]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.name},
        }
        path = PODS.path(meta["namespace"], meta["name"], "binding")
        try:
            await self.client.request("POST", path, body=binding)
        except ApiError as exc:
            if exc.status != 409:  # already bound, by us in an earlier try
                raise

    async def _start(self, pod: Object) -> None:
        await self._write_status(pod, self._running_status(pod, ready=self.ready_after <= 0))
        if self.ready_after > 0:
            meta = pod["metadata"]
            self._spawn(
                self.ready_after,
                functools.partial(self.set_ready, meta["namespace"], meta["name"], True),
            )

    def _running_status(self, pod: Object, *, ready: bool) -> dict[str, Any]:
        started = _now()
        containers = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "containerID": f"simulated://{pod['metadata']['uid']}/{c['name']}",
                "ready": ready,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": started}},
            }
            for c in pod["spec"]["containers"]
        ]
        return {
            "phase": "Running",
            "hostIP": "127.0.0.1",
            "podIP": next(self._ips),
            "startTime": started,
            "conditions": [
                _condition("PodScheduled", True),
                _condition("Initialized", True),
                _condition("ContainersReady", ready),
                _condition("Ready", ready),
            ],
            "containerStatuses": containers,
        }

    async def _write_status(self, pod: Object, status: dict[str, Any]) -> Object:
        meta = pod["metadata"]
        return await self.client.patch(
            PODS, meta["name"], {"status": status}, meta["namespace"], subresource="status"
        )

    async def _current(self, namespace: str, name: str) -> Object:
        return await self.client.get(PODS, name, namespace)

    # Driving one Pod by hand -------------------------------------------------------------

    async def set_ready(self, namespace: str, name: str, ready: bool) -> Object:
        """Flip the Pod's Ready and ContainersReady conditions and its containers' `ready`."""
        pod = await self._current(namespace, name)
        status = pod["status"]
        for container in status.get("containerStatuses") or ():
            container["ready"] = ready
        status["conditions"] = [
            _condition(c["type"], ready) if c["type"] in ("Ready", "ContainersReady") else c
            for c in status.get("conditions") or ()
        ]
        return await self._write_status(pod, status)

    async def terminate(
        self, namespace: str, name: str, outcome: PodOutcome, *, may_restart: bool = True
    ) -> Object:
        """End every container with `outcome`; restartPolicy decides whether it runs again."""
        pod = await self._current(namespace, name)
        restart = pod["spec"].get("restartPolicy", "Always")
        if may_restart and (
            restart == "Always" or (restart == "OnFailure" and outcome.exit_code != 0)
        ):
            return await self._restart(pod, outcome)
        status = pod.get("status") or {}
        finished = _now()
        for container in status.get("containerStatuses") or ():
            started = (container["state"].get("running") or {}).get("startedAt", finished)
            container["ready"] = False
            container["state"] = {
                "terminated": {
                    "exitCode": outcome.exit_code,
                    "reason": outcome.termination_reason,
                    "startedAt": started,
                    "finishedAt": finished,
                    "containerID": container.get("containerID", ""),
                }
            }
        status["phase"] = "Succeeded" if outcome.exit_code == 0 else "Failed"
        reason = "PodCompleted" if outcome.exit_code == 0 else "ContainersNotReady"
        status["conditions"] = [
            _condition(c["type"], False, reason) if c["type"] in ("Ready", "ContainersReady") else c
            for c in status.get("conditions") or ()
        ]
        return await self._write_status(pod, status)

    async def _restart(self, pod: Object, outcome: PodOutcome) -> Object:
        status = pod["status"]
        now = _now()
        for container in status.get("containerStatuses") or ():
            container["lastState"] = {
                "terminated": {
                    "exitCode": outcome.exit_code,
                    "reason": outcome.termination_reason,
                    "finishedAt": now,
                }
            }
            container["restartCount"] = container.get("restartCount", 0) + 1
            container["state"] = {"running": {"startedAt": now}}
        return await self._write_status(pod, status)

    async def succeed(self, namespace: str, name: str) -> Object:
        return await self.terminate(namespace, name, PodOutcome(0))

    async def fail(
        self, namespace: str, name: str, *, exit_code: int = 1, reason: str | None = None
    ) -> Object:
        return await self.terminate(namespace, name, PodOutcome(exit_code, reason))

    async def evict(self, namespace: str, name: str) -> Object:
        """Fail the Pod as the kubelet does under memory pressure: never restarted in place."""
        pod = await self.terminate(namespace, name, PodOutcome(137, "Error"), may_restart=False)
        pod["status"]["reason"] = "Evicted"
        pod["status"]["message"] = "The node was low on resource: memory."
        return await self._write_status(pod, pod["status"])

    async def set_waiting(
        self, namespace: str, name: str, *, reason: str = "ImagePullBackOff", message: str = ""
    ) -> Object:
        """Hold the Pod in Pending with its containers waiting for `reason`."""
        pod = await self._current(namespace, name)
        self._started.add(ObjectKey(namespace, name))
        containers = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": reason, "message": message}},
            }
            for c in pod["spec"]["containers"]
        ]
        status = {
            "phase": "Pending",
            "conditions": [_condition("PodScheduled", True), _condition("Ready", False, reason)],
            "containerStatuses": containers,
        }
        return await self._write_status(pod, status)
