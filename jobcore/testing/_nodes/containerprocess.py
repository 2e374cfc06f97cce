"""A ProcessNode container's process: how it starts, and what its exit records."""

from __future__ import annotations

import asyncio
import os

from jobcore.testing._nodes import podrun
from jobcore.testing._nodes import podsetup
from jobcore.testing._nodes.kubelet import now
from jobcore.testing._nodes.podrun import ContainerRun
from jobcore.testing._nodes.podrun import PodRun
from jobcore.testing._shared.hostcommands import tool


async def start(run: PodRun, c: ContainerRun) -> None:
    """Start the container's command in its Pod's network namespace, in mount and UTS
    namespaces of its own, behind its wrapper; a command that cannot start is recorded as
    terminated with StartError."""
    command = [str(part) for part in c.spec.get("command") or ()]
    if not command or run.sandbox is None or run.deleting:
        message = podrun.NO_COMMAND if not command else "the Pod is being deleted"
        c.state = podrun.terminated(128, "StartError", now(), message)
        return
    args = [str(part) for part in c.spec.get("args") or ()]
    argv = [podsetup.expand(part, c.env) for part in (*command, *args)]
    enter = [tool("ip"), "netns", "exec", run.sandbox.netns, tool("unshare")]
    enter += ["--mount", "--uts", "--propagation", "private", str(c.wrapper)]
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    log = await asyncio.to_thread(os.open, c.log, flags, 0o644)
    try:
        c.process = await asyncio.create_subprocess_exec(
            *enter,
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=c.env,
            cwd=run.directory,
            start_new_session=True,  # its own process group, signalled as one
        )
    except OSError as exc:
        c.state = podrun.terminated(128, "StartError", now(), str(exc))
        return
    finally:
        os.close(log)
    c.state = {"running": {"startedAt": now()}}


def exited(c: ContainerRun, returncode: int) -> None:
    """Record the exit as the kubelet does: the code (128 + signal when killed), the reason,
    and as the message what the container wrote to its termination message file, else with
    FallbackToLogsOnError the end of a failed container's log (reads both)."""
    code = returncode if returncode >= 0 else 128 - returncode
    message = podrun.message_written(c.message_file) or None
    fallback = c.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError"
    if message is None and code != 0 and fallback:
        message = podrun.termination_message(c.log)
    started = c.state.get("running", {}).get("startedAt", now())
    c.state = podrun.terminated(code, "Completed" if code == 0 else "Error", started, message)
    c.ready = False
