"""One Pod on a ProcessNode: its containers' processes and states, and the status they make.

The node changes a `PodRun` as things happen (a process started, a probe passed, an exit) and
reports `pod_status(run)`, the whole status computed from that state, so concurrent reports
never merge stale pieces.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore.testing._nodes import kubelet
from jobcore.testing._nodes.kubelet import now
from jobcore.testing._nodes.netns import GATEWAY
from jobcore.testing._nodes.netns import Sandbox

FINAL_PHASES = ("Succeeded", "Failed")
_TAIL_LINES, _TAIL_BYTES = 80, 2048
"""What the kubelet keeps of the log as a FallbackToLogsOnError termination message."""
_MESSAGE_BYTES = 4096
"""The most of a termination message file the kubelet reads."""
NO_COMMAND = (
    "ProcessNode runs host binaries and has no image to read an entrypoint from: "
    "give the container a command"
)


@dataclass(eq=False)
class ContainerRun:
    """One container: its spec, its process once started, its state and readiness."""

    spec: dict[str, Any]
    init: bool
    directory: Path
    process: asyncio.subprocess.Process | None = None
    env: dict[str, str] = field(default_factory=dict)
    state: dict[str, Any] = field(
        default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}}
    )
    ready: bool = False
    restarts: int = 0
    last_state: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    @property
    def log(self) -> Path:
        return self.directory / f"{self.name}.log"

    @property
    def wrapper(self) -> Path:
        return self.directory / f"{self.name}.sh"

    @property
    def previous_log(self) -> Path:
        """The output of the run before the last restart (`kubectl logs --previous`)."""
        return self.directory / f"{self.name}.previous.log"

    @property
    def message_file(self) -> Path:
        """Bound at the container's terminationMessagePath: what it writes there is its
        termination message, as the kubelet reads it."""
        return self.directory / f"{self.name}.termination-log"

    @property
    def started(self) -> Path:
        """Touched by the wrapper once the mounts are in place, just before the command runs."""
        return self.directory / f"{self.name}.started"

    @property
    def exit_code(self) -> int | None:
        code = self.state.get("terminated", {}).get("exitCode")
        return None if code is None else int(code)

    def back_off(self, delay: float) -> None:
        """Exited, to be started again after `delay` seconds: the exit becomes `lastState`,
        the container waits in CrashLoopBackOff and its log starts afresh (the kubelet's)."""
        self.last_state, self.restarts = self.state, self.restarts + 1
        message = f"back-off {delay:g}s restarting failed container={self.name}"
        self.state = {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.log, self.previous_log)
        self.started.unlink(missing_ok=True)  # Ready again once the new run's mounts are made
        with contextlib.suppress(FileNotFoundError):
            os.truncate(self.message_file, 0)  # each run writes its own

    def status(self) -> dict[str, Any]:
        status = {
            "name": self.name,
            "image": self.spec.get("image", ""),
            "imageID": "",
            "ready": self.ready,
            "started": "running" in self.state,
            "restartCount": self.restarts,
            "state": self.state,
            "lastState": self.last_state,
        }
        if self.process is not None:
            status["containerID"] = f"process://{self.process.pid}"
        return status


@dataclass(eq=False)
class PodRun:
    """One Pod: its sandbox, files, containers, and the transitions already reported."""

    pod: Object
    directory: Path
    containers: list[ContainerRun]
    sandbox: Sandbox | None = None
    ip: str | None = None
    phase: str = "Pending"
    initialized: bool = False
    started_at: str = field(default_factory=now)
    warnings: list[str] = field(default_factory=list)
    deleting: bool = False
    hosts_text: str | None = None
    transitions: dict[str, tuple[bool, str]] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    report_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    release_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @classmethod
    def of(cls, pod: Object, directory: Path) -> PodRun:
        spec = pod["spec"]
        containers = [
            ContainerRun(c, init=True, directory=directory)
            for c in spec.get("initContainers") or ()
        ]
        containers += [ContainerRun(c, init=False, directory=directory) for c in spec["containers"]]
        return cls(pod, directory, containers)

    @property
    def uid(self) -> str:
        return str(self.pod["metadata"]["uid"])

    @property
    def key(self) -> ObjectKey:
        return ObjectKey.of(self.pod)

    @property
    def hosts(self) -> Path:
        return self.directory / "hosts"

    @property
    def resolv(self) -> Path:
        return self.directory / "resolv.conf"

    @property
    def mains(self) -> list[ContainerRun]:
        return [c for c in self.containers if not c.init]

    def signal(self, sig: signal.Signals) -> None:
        """Send `sig` to the process group of every container still running."""
        for container in self.containers:
            if container.process is not None and container.process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(container.process.pid, sig)

    def condition(self, kind: str, value: bool, reason: str | None) -> dict[str, Any]:
        """The condition, keeping its lastTransitionTime while its value stays the same."""
        previous = self.transitions.get(kind)
        if previous is None or previous[0] != value:
            self.transitions[kind] = (value, now())
        result = kubelet.condition(kind, value, None if value else reason)
        result["lastTransitionTime"] = self.transitions[kind][1]
        return result


def restarts(policy: str, exit_code: int | None) -> bool:
    """Whether the kubelet starts a container that exited with `exit_code` again."""
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def back_off_seconds(restarts: int) -> float:
    """The kubelet's crash-loop back-off before restart number `restarts + 1`: at once the first
    time, then 10 s doubling up to 5 minutes."""
    return 0.0 if restarts == 0 else min(10.0 * 2 ** (restarts - 1), 300.0)


def pod_status(run: PodRun) -> dict[str, Any]:
    """The whole Pod status as the node sees it now (a merge patch replaces the lists)."""
    mains = run.mains
    inits = [c for c in run.containers if c.init]
    ready = run.phase == "Running" and all(c.ready for c in mains)
    not_ready = "PodCompleted" if run.phase in FINAL_PHASES else "ContainersNotReady"
    status: dict[str, Any] = {
        "phase": run.phase,
        "hostIP": GATEWAY,
        "startTime": run.started_at,
        "message": "; ".join(run.warnings) or None,
        "conditions": [
            run.condition("PodScheduled", True, None),
            run.condition("Initialized", run.initialized, "ContainersNotInitialized"),
            run.condition("ContainersReady", ready, not_ready),
            run.condition("Ready", ready, not_ready),
        ],
        "containerStatuses": [c.status() for c in mains],
    }
    if inits:
        status["initContainerStatuses"] = [c.status() for c in inits]
    if run.ip:
        status["podIP"], status["podIPs"] = run.ip, [{"ip": run.ip}]
    return status


def terminated(code: int, reason: str, started: str, message: str | None) -> dict[str, Any]:
    """A container state `terminated` that ends now."""
    state: dict[str, Any] = {
        "exitCode": code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": now(),
    }
    if message:
        state["message"] = message
    return {"terminated": state}


def tail_bytes(path: Path, size: int) -> bytes:
    """The file's last `size` bytes; none if it cannot be read (blocking: use a thread)."""
    try:
        with path.open("rb") as file:
            file.seek(max(0, file.seek(0, os.SEEK_END) - size))
            return file.read()
    except OSError:
        return b""


def message_written(path: Path) -> str:
    """What a container wrote to its termination message file, cut at the kubelet's 4096
    bytes; empty if nothing (blocking)."""
    try:
        with path.open("rb") as file:
            return file.read(_MESSAGE_BYTES).decode(errors="replace")
    except OSError:
        return ""


def termination_message(log: Path) -> str:
    """The log's last lines within the kubelet's FallbackToLogsOnError limits (blocking)."""
    text = tail_bytes(log, _TAIL_BYTES).decode(errors="replace")
    return "\n".join(text.splitlines()[-_TAIL_LINES:])
