"""Host commands the kit runs: found by absolute path, checked, run async or not.

The process node's network namespaces and the real cluster's certificates, host state and
kubectl calls are all made with host binaries; a failure is a HostCommandError naming the
command.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Sequence
from typing import NamedTuple

from jobcore import JobcoreError


class Result(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


class HostCommandError(JobcoreError):
    """A command that changes the host failed."""


def tool(name: str) -> str:
    """The absolute path of a host binary (a container's env may change PATH)."""
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if path is None:
        raise HostCommandError(f"{name} is not installed")
    return path


def checked(result: Result, argv: Sequence[str]) -> Result:
    """The result of `argv` if it exited 0, else a HostCommandError with its stderr."""
    if result.returncode != 0:
        raise HostCommandError(f"{' '.join(argv)}: exit {result.returncode}: {result.stderr}")
    return result


async def run(*argv: str, check: bool = True) -> Result:
    """Run one host command without blocking the event loop."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    done = asyncio.ensure_future(proc.communicate())
    try:
        out, err = await asyncio.shield(done)
    except asyncio.CancelledError:
        await done  # short: finish it rather than leave a half-made change and a live pipe
        raise
    result = Result(proc.returncode or 0, out.decode(), err.decode().strip())
    return checked(result, argv) if check else result


def run_now(*argv: str, check: bool = True) -> Result:
    """Run one host command synchronously (outside any event loop)."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    result = Result(done.returncode, done.stdout, done.stderr.strip())
    return checked(result, argv) if check else result
