"""Host daemons that may outlive the Python process that started them, found by pid files.

The real cluster's processes must survive `jobcore sandbox --cluster --keep` and be stopped by
a later `--down` or by the next run's clean-up after a crash, so each is recorded in
`<pids>/<name>.pid` rather than held only as a child process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

_children: dict[int, subprocess.Popen[bytes]] = {}
"""The ones this process started, polled so that a dead one is reaped, not left a zombie."""


def pid_of(pids: Path, name: str) -> int | None:
    """The pid recorded for `name`, if that process still runs."""
    try:
        pid = int((pids / f"{name}.pid").read_text())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    if (child := _children.get(pid)) is not None and child.poll() is not None:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def start(pids: Path, name: str, argv: Sequence[str], log: Path) -> int:
    """Start `argv` in a session of its own (a Ctrl-C on the terminal does not reach it)."""
    with log.open("ab") as out:
        child = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    _children[child.pid] = child
    (pids / f"{name}.pid").write_text(str(child.pid))
    return child.pid


async def stop(pids: Path, name: str, *, grace: float = 20.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; forget the pid file."""
    path = pids / f"{name}.pid"
    if (pid := pid_of(pids, name)) is not None:
        _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while alive(pid):
            if time.monotonic() > deadline:
                _signal(pid, signal.SIGKILL)
            await asyncio.sleep(0.1)
    path.unlink(missing_ok=True)


def recorded(pids: Path) -> list[str]:
    """The names that have a pid file, running or not."""
    return sorted(path.stem for path in pids.glob("*.pid")) if pids.is_dir() else []


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
