"""A simulated node: plays scheduler and kubelet for Pods on an API server that has neither."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from typing import ClassVar
from typing import Unpack

from jobcore._runtime.client import Client
from jobcore._runtime.labels import parse_selector
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore.testing._nodes.kubelet import NodeBase
from jobcore.testing._nodes.kubelet import NodeOptions
from jobcore.testing._nodes.kubelet import condition as _condition
from jobcore.testing._nodes.kubelet import now as _now
from jobcore.testing._nodes.kubeletlogs import MemoryLog

LogKey = tuple[str, str, str]
"""(namespace, pod, container)"""

PodMatcher = Callable[[Object], bool]
_FINAL_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class PodOutcome:
    """How a running Pod's containers end: exit code, termination reason, when, and the
    last words each writes to its log."""

    exit_code: int = 0
    reason: str | None = None
    after: float = 0.0
    log: str = ""

    @property
    def termination_reason(self) -> str:
        return self.reason or ("Completed" if self.exit_code == 0 else "Error")


def _matcher(selector: str | PodMatcher) -> PodMatcher:
    if callable(selector):
        return selector
    matches = parse_selector(selector)
    return lambda pod: matches(pod["metadata"].get("labels") or {})


class SimulatedNode(NodeBase):
    """Binds unscheduled Pods to itself and writes their status as a kubelet would.

    Bound Pods become Running and Ready (after `ready_after` seconds); `when` rules end
    matching Pods with an exit code and reason; `succeed`, `fail`, `evict`, `set_waiting`
    and `set_ready` drive one Pod by hand; `write_log` gives a container output, which
    `pods/log` and `kubectl logs` read (a restart moves it to the previous run's). Deleted
    Pods are finalised (the API server waits for the kubelet before removing a bound Pod).
    Scope it to a namespace so that several nodes can share one API server.
    """

    node_labels: ClassVar[dict[str, str]] = {"jobcore.dev/simulated": "true"}
    default_name: ClassVar[str] = "jobcore-simulated-node"

    def __init__(
        self, client: Client, *, ready_after: float = 0.0, **options: Unpack[NodeOptions]
    ) -> None:
        super().__init__(client, **options)
        self.ready_after = ready_after
        self._rules: list[tuple[PodMatcher, PodOutcome]] = []
        self._started: set[ObjectKey] = set()
        self._scheduled_ends: set[ObjectKey] = set()
        self._ips = (f"10.244.{i // 250}.{i % 250 + 2}" for i in itertools.count())
        self._logs: dict[LogKey, MemoryLog] = {}
        self._previous_logs: dict[LogKey, MemoryLog] = {}

    def _forget(self, key: ObjectKey) -> None:
        self._started.discard(key)
        self._scheduled_ends.discard(key)
        for logs in (self._logs, self._previous_logs):
            for log_key in [k for k in logs if k[:2] == (key.namespace, key.name)]:
                del logs[log_key]

    def write_log(self, namespace: str, pod: str, container: str, text: str) -> None:
        """Append `text` to the container's log (its last MiB is kept); followers see it."""
        self._logs.setdefault((namespace, pod, container), MemoryLog()).write(text.encode())

    def _container_log(
        self, namespace: str, pod: str, container: str, previous: bool
    ) -> MemoryLog | None:
        return (self._previous_logs if previous else self._logs).get((namespace, pod, container))

    def when(
        self,
        selector: str | PodMatcher,
        *,
        exit_code: int = 0,
        reason: str | None = None,
        after: float = 0.0,
        log: str = "",
    ) -> None:
        """End running Pods that match `selector` (labels or a function) after `after` seconds,
        their containers writing `log` first."""
        self._rules.append((_matcher(selector), PodOutcome(exit_code, reason, after, log)))

    async def _on_bound(self, key: ObjectKey, pod: Object) -> None:
        if (pod.get("status") or {}).get("phase") in _FINAL_PHASES:
            return
        if key not in self._started:
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
        for container in pod["spec"]["containers"] if outcome.log else ():
            self.write_log(namespace, name, container["name"], outcome.log)
        restart = pod["spec"].get("restartPolicy", "Always")
        if may_restart and (
            restart == "Always" or (restart == "OnFailure" and outcome.exit_code != 0)
        ):
            return await self._restart(pod, outcome)
        return await self._write_status(pod, self._ended_status(pod, outcome))

    def _ended_status(self, pod: Object, outcome: PodOutcome) -> dict[str, Any]:
        status: dict[str, Any] = pod.get("status") or {}
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
        return status

    async def _restart(self, pod: Object, outcome: PodOutcome) -> Object:
        status = pod["status"]
        now = _now()
        meta = pod["metadata"]
        for container in status.get("containerStatuses") or ():
            key = (meta["namespace"], meta["name"], container["name"])
            self._previous_logs[key] = self._logs.pop(key, MemoryLog())
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
        self,
        namespace: str,
        name: str,
        *,
        exit_code: int = 1,
        reason: str | None = None,
        log: str = "",
    ) -> Object:
        return await self.terminate(namespace, name, PodOutcome(exit_code, reason, log=log))

    async def evict(self, namespace: str, name: str) -> Object:
        """Fail the Pod as the kubelet does under memory pressure: never restarted in place."""
        pod = await self._current(namespace, name)
        status = self._ended_status(pod, PodOutcome(137, "Error"))
        # One write, as the kubelet sends it: nobody sees a plain exit 137 first.
        status.update(reason="Evicted", message="The node was low on resource: memory.")
        return await self._write_status(pod, status)

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
