"""A node that runs each bound Pod's containers as host processes in the Pod's own namespaces.

The image is ignored: a container's `command` (its entrypoint; there is no image to read one
from) and `args` run as host binaries, in a network namespace per Pod (`netns`) and a mount and
UTS namespace per container, behind a wrapper that mounts the Pod's volumes, hosts file and
resolv.conf (`podsetup`), then runs the command as the securityContext's user and groups
(`podidentity`). Readiness probes run for real (`probes`); exits become
`state.terminated`, with what the container wrote at its terminationMessagePath (a file per
container, bound there), and the Pod's phase (`podrun`). A container that exits is started again as
its Pod's restartPolicy says, after the kubelet's back-off (shortened); init containers are not
restarted. Liveness and startup probes, resources, security
contexts beyond their user, groups and fsGroup, hostNetwork, and updates of a mounted Secret or
ConfigMap are ignored.

Needs root, `ip`, `unshare`, `nsenter` and `mount`: `process_node_available()` says why not.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any
from typing import ClassVar
from typing import Unpack

import structlog

from jobcore._runtime.client import Client
from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore.testing._nodes import containerprocess
from jobcore.testing._nodes import netns
from jobcore.testing._nodes import podidentity
from jobcore.testing._nodes import podrun
from jobcore.testing._nodes import podsetup
from jobcore.testing._nodes import probes
from jobcore.testing._nodes.kubelet import NodeBase
from jobcore.testing._nodes.kubelet import NodeOptions
from jobcore.testing._nodes.kubeletlogs import FileLog
from jobcore.testing._nodes.netns import prepare_host
from jobcore.testing._nodes.netns import process_node_available
from jobcore.testing._nodes.podrun import ContainerRun
from jobcore.testing._nodes.podrun import PodRun
from jobcore.testing._shared.hostcommands import HostCommandError

__all__ = ["ProcessNode", "prepare_host", "process_node_available"]

_log = structlog.get_logger("jobcore.testing.processnode")
_KEPT_LOG_BYTES = 1 << 20
_SETUP_RETRY = 1.0
_STARTED_POLL = 0.02


class ProcessNode(NodeBase):
    """Binds unscheduled Pods to itself and runs their containers as host processes.

    Same contract as `SimulatedNode`: `run()` until cancelled; registers a Node; finalises
    deleted Pods, after SIGTERM to each container's process group and SIGKILL once the grace
    period (capped at `max_grace` seconds) is over. Probe periods longer than
    `max_probe_period`, and restart back-offs longer than `max_restart_delay`, are shortened,
    so tests need not wait. Stopping the node kills every
    process it started and removes every namespace, veth and file it made. `logs()` returns a
    container's output (stdout and stderr, interleaved), also after its Pod is gone.
    """

    node_labels: ClassVar[dict[str, str]] = {"jobcore.dev/process-node": "true"}
    default_name: ClassVar[str] = "jobcore-process-node"

    def __init__(
        self,
        client: Client,
        *,
        max_grace: float = 10.0,
        max_probe_period: float = 1.0,
        max_restart_delay: float = 1.0,
        **options: Unpack[NodeOptions],
    ) -> None:
        super().__init__(client, **options)
        self.max_grace = max_grace
        self.max_probe_period = max_probe_period
        self.max_restart_delay = max_restart_delay
        self._runs: dict[ObjectKey, PodRun] = {}
        self._kept_logs: dict[tuple[str, str, str], str] = {}
        self._token = uuid.uuid4().hex
        self._directory: Path | None = None
        self._dns_changed = asyncio.Event()
        self._hosts_lock = asyncio.Lock()

    def logs(self, namespace: str, pod: str, container: str, *, previous: bool = False) -> str:
        """What the container wrote to stdout and stderr (its last MiB once the Pod is gone);
        `previous`: in its run before the last restart, while the Pod is there."""
        if (log := self._log_file(namespace, pod, container, previous)) is not None:
            return log.read_text(errors="replace") if log.exists() else ""
        kept = self._kept_logs.get((namespace, pod, container))
        if kept is None:
            raise KeyError(f"no container {container} of pod {namespace}/{pod} ran on {self.name}")
        return kept

    def _container_log(
        self, namespace: str, pod: str, container: str, previous: bool
    ) -> FileLog | None:
        log = self._log_file(namespace, pod, container, previous)
        return FileLog(log) if log is not None and log.exists() else None

    def _log_file(self, namespace: str, pod: str, container: str, previous: bool) -> Path | None:
        """Where the container of a Pod still here writes its log (or its previous run's)."""
        run = self._runs.get(ObjectKey(namespace, pod))
        for c in run.containers if run else ():
            if c.name == container:
                return c.previous_log if previous else c.log
        return None

    # Informer events also drive the hosts files ------------------------------------------

    def on_add(self, obj: Object) -> None:
        super().on_add(obj)
        self._dns_changed.set()

    def on_update(self, old: Object, new: Object) -> None:
        super().on_update(old, new)
        self._dns_changed.set()

    def on_delete(self, obj: Object) -> None:
        super().on_delete(obj)
        self._dns_changed.set()

    # The node ------------------------------------------------------------------------------

    async def _start_up(self) -> None:
        reason = await asyncio.to_thread(process_node_available)
        if reason:
            raise RuntimeError(reason)
        await prepare_host()
        self._directory = await asyncio.to_thread(netns.node_directory)
        netns.clean_up_at_exit(self._token, self._directory)

    def _services(self) -> list[Coroutine[Any, Any, None]]:
        return [self._keep_hosts_files()]

    async def _shut_down(self) -> None:
        if self._directory is None:
            return  # start-up failed before anything was made
        runs = list(self._runs.values())
        self._runs.clear()
        try:
            for run in runs:
                run.signal(signal.SIGKILL)
            # Every sandbox leased under our token, also any a cancelled set-up left half-made.
            await netns.sweep(tokens=frozenset({self._token}))
            processes = [c.process.wait() for r in runs for c in r.containers if c.process]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*processes), 5)
            for run in runs:
                await asyncio.to_thread(self._keep_logs, run)
            if self._directory is not None:
                await asyncio.to_thread(shutil.rmtree, self._directory, True)
            self._directory = None
        finally:
            netns.forget_at_exit(self._token)

    # Pod events ----------------------------------------------------------------------------

    async def _on_bound(self, key: ObjectKey, pod: Object) -> None:
        run = self._runs.get(key)
        if run is not None:
            if run.uid == pod["metadata"]["uid"]:
                run.pod = pod
            return
        if (pod.get("status") or {}).get("phase") in podrun.FINAL_PHASES or not self._directory:
            return
        uid = pod["metadata"]["uid"]
        run = PodRun.of(pod, self._directory / f"{key.namespace}.{key.name}.{uid[:8]}")
        self._runs[key] = run
        run.task = self._background(self._lifecycle(run))

    async def _on_deleting(self, key: ObjectKey, pod: Object) -> None:
        run = self._runs.get(key)
        if run is None or run.uid != pod["metadata"]["uid"]:
            await self._finalise(pod)
        elif not run.deleting:
            run.deleting = True
            self._background(self._delete(run, pod))

    def _forget(self, key: ObjectKey) -> None:
        run = self._runs.get(key)
        if run is not None and not run.deleting:  # deleted with grace 0: stop it all the same
            run.deleting = True
            self._background(self._delete(run, None))

    async def _delete(self, run: PodRun, pod: Object | None) -> None:
        """SIGTERM, SIGKILL after the grace period, remove everything, then finalise."""
        meta = (pod or run.pod)["metadata"]
        grace = meta.get(
            "deletionGracePeriodSeconds", run.pod["spec"].get("terminationGracePeriodSeconds", 30)
        )
        run.signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(min(float(grace), self.max_grace)):
                await run.done.wait()
        except TimeoutError:
            run.signal(signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await run.done.wait()
        if run.task is not None:
            run.task.cancel()
            await asyncio.gather(run.task, return_exceptions=True)
        await self._release(run)
        await asyncio.to_thread(self._keep_logs, run)
        await asyncio.to_thread(shutil.rmtree, run.directory, True)
        if self._runs.get(run.key) is run:
            del self._runs[run.key]
            self._queue.add(run.key)  # a new Pod of the same name may be waiting for this one
        if pod is not None:
            await self._finalise(pod)

    def _keep_logs(self, run: PodRun) -> None:
        """Keep the end of every log in memory before the Pod's files go (blocking)."""
        for c in run.containers:
            if c.process is not None:
                kept = podrun.tail_bytes(c.log, _KEPT_LOG_BYTES).decode(errors="replace")
                self._kept_logs[(run.key.namespace, run.key.name, c.name)] = kept

    async def _release(self, run: PodRun) -> None:
        """Kill what is left in the Pod's network namespace and remove it; keep the files."""
        async with run.release_lock:
            if run.sandbox is not None:
                await netns.destroy_sandbox(run.sandbox)
                run.sandbox = None

    # Running one Pod -----------------------------------------------------------------------

    async def _lifecycle(self, run: PodRun) -> None:
        try:
            if await self._set_up(run):
                await self._run_containers(run)
        except Exception as exc:  # a bug, or a Pod this node cannot run: say so on the Pod
            _log.exception("process pod failed", pod=str(run.key))
            run.phase, run.warnings = "Failed", [*run.warnings, f"ProcessNode failed: {exc!r}"]
            await self._report(run)
        finally:
            run.done.set()
        if not run.deleting:
            await self._release(run)  # ended: its network goes, its files stay for logs()

    async def _set_up(self, run: PodRun) -> bool:
        """Sandbox, volumes, env and wrappers; retried while a Secret or ConfigMap is missing."""
        while not run.deleting:
            try:
                await self._prepare(run)
                return True
            except (podsetup.NotReadyError, HostCommandError) as exc:
                for c in run.containers:
                    c.state = {"waiting": {"reason": "ContainerCreating", "message": str(exc)}}
                await self._report(run)
                await asyncio.sleep(_SETUP_RETRY)
        return False

    async def _prepare(self, run: PodRun) -> None:
        await asyncio.to_thread(run.directory.mkdir, parents=True, exist_ok=True)
        if run.sandbox is None:
            run.sandbox = await netns.create_sandbox(uid=run.uid, token=self._token)
            run.ip = run.sandbox.ip
        sources = podsetup.Sources(self.client, run.key.namespace)
        volumes, skipped = await podsetup.volumes(sources, run.pod, run.directory / "volumes")
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        base["HOSTNAME"] = podsetup.hostname(run.pod)
        unset = []
        for c in run.containers:
            user = podidentity.identity(run.pod, c.spec)
            env = {**base, "HOME": podidentity.home(user)}
            c.env, not_set = await podsetup.environment(
                sources, run.pod, c.spec, base=env, ip=run.ip or "", host_ip=netns.GATEWAY
            )
            unset += not_set
            await asyncio.to_thread(
                podsetup.write_wrapper,
                c.wrapper,
                pod=run.pod,
                container=c.spec,
                volumes=volumes,
                hosts=run.hosts,
                resolv=run.resolv,
                started=c.started,
                message_file=c.message_file,
            )
        run.warnings = [
            f"ProcessNode skipped {what}: {', '.join(items)}"
            for what, items in (("volumes", skipped), ("env vars", unset))
            if items
        ]
        await asyncio.to_thread(podsetup.write_in_place, run.resolv, podsetup.RESOLV_CONF)
        await self._write_hosts_files()

    async def _run_containers(self, run: PodRun) -> None:
        """Init containers one by one, then the others together; the phase follows."""
        for c in run.containers:
            if not c.init:
                continue
            for main in run.mains:
                main.state = {"waiting": {"reason": "PodInitializing"}}
            await containerprocess.start(run, c)
            await self._watch(run, c)
            if c.exit_code != 0:
                run.phase = "Failed"
                await self._report(run)
                return
        run.initialized = True
        for c in run.mains:
            await containerprocess.start(run, c)
        run.phase = "Running"
        await self._report(run)
        await asyncio.gather(*(self._keep_running(run, c) for c in run.mains))
        succeeded = all(c.exit_code == 0 for c in run.mains)
        run.phase = "Succeeded" if succeeded else "Failed"
        await self._report(run)

    async def _keep_running(self, run: PodRun, c: ContainerRun) -> None:
        """Watch the container; while the Pod's restartPolicy says so, start it again after
        the kubelet's back-off (at most `max_restart_delay`) each time it exits."""
        policy = run.pod["spec"].get("restartPolicy") or "Always"
        while True:
            await self._watch(run, c)
            if run.deleting or c.process is None or not podrun.restarts(policy, c.exit_code):
                return
            delay = min(podrun.back_off_seconds(c.restarts), self.max_restart_delay)
            await asyncio.to_thread(c.back_off, delay)
            await self._report(run)
            await asyncio.sleep(delay)
            exited = c.process
            await containerprocess.start(run, c)
            if c.process is exited:  # not started (StartError, or the Pod is being deleted)
                await self._report(run)
                return

    async def _watch(self, run: PodRun, c: ContainerRun) -> None:
        """Probe the container's readiness until its process exits, then record the exit."""
        if c.process is None:
            await self._report(run)
            return
        readiness = None if c.init else asyncio.create_task(self._readiness(run, c, c.process))
        try:
            returncode = await c.process.wait()
        finally:
            if readiness is not None:
                readiness.cancel()
        await asyncio.to_thread(containerprocess.exited, c, returncode)
        await self._report(run)

    async def _readiness(
        self, run: PodRun, c: ContainerRun, process: asyncio.subprocess.Process
    ) -> None:
        """Ready once mounted and probed successThreshold times in a row; unready after
        failureThreshold failures in a row. No probe: ready once mounted."""
        while not await asyncio.to_thread(c.started.exists):
            if process.returncode is not None:
                return
            await asyncio.sleep(_STARTED_POLL)
        spec = c.spec.get("readinessProbe")
        if not spec:
            c.ready = True
            await self._report(run)
            return

        async def set_ready(ready: bool) -> None:
            c.ready = ready
            await self._report(run)

        await probes.keep_probing(
            spec,
            probes.ProbeTarget(c.spec, run.ip or "", process.pid, c.env),
            longest_period=self.max_probe_period,
            ready=c.ready,
            set_ready=set_ready,
        )

    async def _report(self, run: PodRun) -> None:
        """Write the Pod's whole status as it is now; one write at a time per Pod."""
        async with run.report_lock:
            try:
                await self._write_status(run.pod, podrun.pod_status(run))
            except ApiError as exc:  # once deleting: gone, or replaced by a namesake (422)
                if not run.deleting and not isinstance(exc, NotFoundError):
                    _log.warning("writing pod status failed", pod=str(run.key), error=str(exc))

    # Name resolution -----------------------------------------------------------------------

    async def _keep_hosts_files(self) -> None:
        while True:
            await self._dns_changed.wait()
            self._dns_changed.clear()
            await self._write_hosts_files()

    async def _write_hosts_files(self) -> None:
        """Rewrite, in place, each running Pod's hosts file whose content changed."""
        async with self._hosts_lock:
            records = podsetup.dns_records(self.pods.list())
            for run in list(self._runs.values()):
                if run.sandbox is None or run.ip is None:
                    continue
                neighbours = records.get(run.key.namespace, ())
                text = podsetup.hosts_file(run.pod, run.ip, neighbours)
                if text != run.hosts_text:
                    await asyncio.to_thread(podsetup.write_in_place, run.hosts, text)
                    run.hosts_text = text
