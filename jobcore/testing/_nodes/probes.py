"""One run of a container's probe against a process pod, as the kubelet would run it.

tcpSocket and httpGet connect from the host (root network namespace) to the pod's address;
exec runs the command inside the container's network, mount and UTS namespaces with nsenter.
A gRPC probe is approximated by a TCP connect to its port.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import ssl
import subprocess
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobcore.testing._shared.hostcommands import tool

DEFAULT_TIMEOUT = 1.0


def port_number(port: int | str, container: Mapping[str, Any]) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for declared in container.get("ports") or ():
        if declared.get("name") == port:
            return int(declared["containerPort"])
    raise ValueError(f"container {container.get('name')} has no port named {port!r}")


async def _tcp(ip: str, port: int) -> bool:
    _, writer = await asyncio.open_connection(ip, port)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def _http(ip: str, port: int, get: Mapping[str, Any]) -> bool:
    """GET the path; success is a status from 200 to 399, as the kubelet counts it."""
    context = None
    if str(get.get("scheme", "HTTP")).upper() == "HTTPS":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the kubelet does not verify either
    reader, writer = await asyncio.open_connection(ip, port, ssl=context)
    try:
        headers = {"Host": f"{ip}:{port}", "User-Agent": "kube-probe/jobcore"}
        headers.update({h["name"]: h["value"] for h in get.get("httpHeaders") or ()})
        request = f"GET {get.get('path') or '/'} HTTP/1.0\r\n"
        request += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        writer.write((request + "\r\n").encode())
        await writer.drain()
        status_line = (await reader.readline()).decode(errors="replace").split()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return len(status_line) >= 2 and status_line[1].isdigit() and 200 <= int(status_line[1]) < 400


async def _exec(pid: int, command: list[str], env: Mapping[str, str]) -> bool:
    argv = [tool("nsenter"), "--target", str(pid), "--net", "--mount", "--uts", "--wd", *command]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(env),
        start_new_session=True,
    )
    try:
        return await proc.wait() == 0
    finally:
        if proc.returncode is None:  # timed out or cancelled: no probe outlives its period
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()


@dataclass(frozen=True, slots=True)
class ProbeTarget:
    """What a container's probes reach: its spec (named ports), its pod's IP, and the pid and
    environment an exec probe runs in."""

    container: Mapping[str, Any]
    ip: str
    pid: int
    env: Mapping[str, str]


async def probe(spec: Mapping[str, Any], target: ProbeTarget) -> bool:
    """Run the probe once within its `timeoutSeconds`; True when it passed."""
    timeout = float(spec.get("timeoutSeconds") or DEFAULT_TIMEOUT)
    try:
        async with asyncio.timeout(timeout):
            if "exec" in spec:
                command = list(spec["exec"].get("command") or ())
                return await _exec(target.pid, command, target.env)
            if "httpGet" in spec:
                get = spec["httpGet"]
                host = get.get("host") or target.ip
                return await _http(host, port_number(get["port"], target.container), get)
            for kind in ("tcpSocket", "grpc"):
                if kind in spec:
                    return await _tcp(target.ip, port_number(spec[kind]["port"], target.container))
    except (OSError, TimeoutError, ValueError):
        return False
    return False


async def keep_probing(
    spec: Mapping[str, Any],
    target: ProbeTarget,
    *,
    longest_period: float,
    ready: bool,
    set_ready: Callable[[bool], Awaitable[None]],
) -> None:
    """Probe every periodSeconds (at most `longest_period`) after initialDelaySeconds, and call
    `set_ready` with the new state once successThreshold passes (or failureThreshold failures)
    in a row turn it over; `ready` is the state before the first probe. Runs until cancelled."""
    await asyncio.sleep(float(spec.get("initialDelaySeconds", 0)))
    period = min(float(spec.get("periodSeconds") or 10), longest_period)
    needed = {True: spec.get("successThreshold") or 1, False: spec.get("failureThreshold") or 3}
    streak, last = 0, None
    while True:
        passed = await probe(spec, target)
        streak = streak + 1 if passed == last else 1
        last = passed
        if passed != ready and streak >= needed[passed]:
            ready = passed
            await set_ready(ready)
        await asyncio.sleep(period)
