"""The scheduler-and-kubelet loop the testing kit's nodes share: bind, register, report, finalise.

`NodeBase` watches the Pods of a namespace, binds the unscheduled ones to itself, registers a
Node object and hands every change of a Pod to one worker at a time; subclasses decide what
running a bound Pod means (`SimulatedNode` writes a status, `ProcessNode` starts processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Coroutine
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import ClassVar
from typing import TypedDict
from typing import Unpack

import structlog

from jobcore._runtime.client import Client
from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import ConflictError
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.informer import Informer
from jobcore._runtime.resources import NODES
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore._runtime.workqueue import QueueShutDown
from jobcore._runtime.workqueue import WorkQueue
from jobcore.testing._nodes.kubeletlogs import ContainerLog
from jobcore.testing._nodes.kubeletlogs import LogServer

_log = structlog.get_logger("jobcore.testing.node")
_MAX_RETRY_SECONDS = 5.0
"""The longest wait between two tries of a node action the API server failed."""


def now() -> str:
    """The current time as the API writes timestamps (RFC 3339, seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(kind: str, status: bool, reason: str | None = None) -> dict[str, Any]:
    """A Pod condition of type `kind` that changed just now."""
    result = {
        "type": kind,
        "status": "True" if status else "False",
        "lastTransitionTime": now(),
    }
    if reason:
        result["reason"] = reason
    return result


class NodeOptions(TypedDict, total=False):
    """What every node of the testing kit takes besides its client and its own options."""

    name: str
    """The name of its Node object; each kind of node has its own default."""
    namespace: str | None
    """The namespace whose Pods it serves; None (the default): every namespace."""
    workers: int
    """How many Pods it handles at once (16)."""
    register: bool
    """Whether it registers a Node object for itself (True)."""


class NodeBase:
    """Binds unscheduled Pods to itself and passes each bound Pod's changes to the subclass.

    `run()` serves until cancelled; a registered node also serves its containers' logs to the
    API server (`kubeletlogs`), as the subclass's `_container_log` finds them. Every
    informer event funnels into a work queue, so one Pod is handled by one worker at a time;
    a failed API call is retried with backoff. Subclasses implement `_on_bound` (a bound Pod
    changed) and `_on_deleting` (a bound Pod is being deleted: the API server waits for the
    node to confirm with `_finalise`), and may hook `_start_up`, `_services`, `_shut_down`
    and `_container_log`.
    """

    node_labels: ClassVar[dict[str, str]] = {}
    """Labels of the registered Node object."""
    default_name: ClassVar[str] = "jobcore-node"
    """The Node's name unless one is given."""

    def __init__(self, client: Client, **options: Unpack[NodeOptions]) -> None:
        self.client = client
        self.name = options.get("name", self.default_name)
        self.namespace = options.get("namespace")
        self.pods = Informer(client, PODS, namespace=self.namespace)
        self._queue: WorkQueue[ObjectKey] = WorkQueue()
        self._workers = options.get("workers", 16)
        self._register = options.get("register", True)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.pods.add_handler(self)

    # Informer events: everything funnels into the queue so one Pod is handled at a time.

    def on_add(self, obj: Object) -> None:
        self._queue.add(ObjectKey.of(obj))

    def on_update(self, old: Object, new: Object) -> None:
        self._queue.add(ObjectKey.of(new))

    def on_delete(self, obj: Object) -> None:
        self._forget(ObjectKey.of(obj))

    # Hooks -------------------------------------------------------------------------------

    def _forget(self, key: ObjectKey) -> None:
        """The Pod is gone from the API: drop what was kept about it."""

    async def _on_bound(self, key: ObjectKey, pod: Object) -> None:
        """A Pod bound to this node was added or changed (and is not being deleted)."""

    async def _on_deleting(self, key: ObjectKey, pod: Object) -> None:
        """A Pod bound to this node is being deleted; the default finalises it at once."""
        await self._finalise(pod)

    async def _start_up(self) -> None:
        """Runs first in `run()`, before the Node is registered."""

    def _services(self) -> list[Coroutine[Any, Any, None]]:
        """Coroutines that run beside the workers for as long as the node does."""
        return []

    async def _shut_down(self) -> None:
        """Runs last in `run()`, after every worker and background task has stopped."""

    def _container_log(
        self, namespace: str, pod: str, container: str, previous: bool
    ) -> ContainerLog | None:
        """The log of a container of a Pod bound here (of its run before the last restart,
        with `previous`); None if it has none."""
        return None

    # Running -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the Pods until cancelled."""
        informer: asyncio.Task[None] | None = None
        logs = LogServer(self.name, self.pods, self._container_log)
        try:
            await self._start_up()
            if self._register:
                await self._register_node(await logs.start())
            informer = asyncio.create_task(self.pods.run())
            await self.pods.wait_for_sync()
            async with asyncio.TaskGroup() as group:
                for _ in range(self._workers):
                    group.create_task(self._worker())
                for service in self._services():
                    group.create_task(service)
        finally:
            tasks = [t for t in (informer, *self._tasks) if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._queue.shutdown(drain=False)
            await logs.stop()
            await self._shut_down()

    async def _register_node(self, log_port: int) -> None:
        """Create the Node (unless there), then say in its status where its logs are served."""
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": dict(self.node_labels)},
        }
        try:
            await self.client.create(NODES, node)
        except ApiError as exc:
            if exc.status != 409:
                raise
        addresses = [
            {"type": "InternalIP", "address": "127.0.0.1"},
            {"type": "Hostname", "address": self.name},
        ]
        status = {
            "addresses": addresses,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": log_port}},
        }
        await self.client.patch(NODES, self.name, {"status": status}, subresource="status")

    async def _worker(self) -> None:
        """Handle the Pods the queue hands out, one after another, until it shuts down."""
        with contextlib.suppress(QueueShutDown):
            while True:
                await self._handle_one(await self._queue.get())

    async def _handle_one(self, key: ObjectKey) -> None:
        """Handle the Pod `key`, and again later if the API server failed what that did."""
        try:
            await self._handle(key)
        except NotFoundError:
            pass
        except ApiError as exc:
            _log.warning("node failed, retrying", node=self.name, pod=str(key), error=str(exc))
            self._queue.add_rate_limited(key)
        finally:
            self._queue.done(key)

    async def _handle(self, key: ObjectKey) -> None:
        pod = self.pods.get(key.name, key.namespace)
        if pod is None:
            return
        node_name = pod["spec"].get("nodeName")
        if node_name and node_name != self.name:
            return  # another node's pod
        if pod["metadata"].get("deletionTimestamp"):
            if node_name:  # the API server waits for the kubelet to confirm a bound pod is gone
                await self._on_deleting(key, pod)
        elif not node_name:
            await self._bind(pod)
        else:
            await self._on_bound(key, pod)

    def _background(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run `work` beside the workers; `run()` cancels it when the node stops."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _spawn(self, delay: float, action: Callable[[], Awaitable[Object]]) -> None:
        """Run `action()` after `delay` seconds without holding up a worker.

        Like a kubelet's status update, the action is retried while the API server is away
        (transient errors) until it lands or the node stops; a Pod gone or replaced is not.
        """

        async def later() -> None:
            await asyncio.sleep(delay)
            for attempt in itertools.count(1):
                try:
                    await action()
                    return
                except ApiError as exc:
                    _log.debug("node action failed", node=self.name, error=str(exc))
                    if not exc.retryable:
                        return
                await asyncio.sleep(min(_MAX_RETRY_SECONDS, 0.1 * 2**attempt))

        self._background(later())

    # Talking to the API ------------------------------------------------------------------

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

    async def _write_status(self, pod: Object, status: dict[str, Any]) -> Object:
        """Patch the status of this very Pod: with its uid in the patch, as the kubelet does,
        the API refuses (422) to write to a new Pod that took the name."""
        meta = pod["metadata"]
        patch = {"metadata": {"uid": meta["uid"]}, "status": status}
        return await self.client.patch(
            PODS, meta["name"], patch, meta["namespace"], subresource="status"
        )

    async def _finalise(self, pod: Object) -> None:
        """Confirm the deletion of a bound Pod: delete it now, only if it is still this one."""
        meta = pod["metadata"]
        # NotFound: gone already; Conflict: replaced by a new Pod of the same name.
        with contextlib.suppress(NotFoundError, ConflictError):
            await self.client.delete(
                PODS, meta["name"], meta["namespace"], grace_period_seconds=0, uid=meta["uid"]
            )
