"""Host networking for process pods: a shared bridge, and per pod a netns, a veth and an address.

Pods get addresses in 10.213.0.0/16 behind the bridge `jcbr0` (10.213.0.1, also their default
route), so the host reaches every pod and pods reach each other; nothing is NATed.

Whatever a pod gets is first recorded in a lease file, `/run/jobcore-processnode/leases/<ip>`,
holding the owner's pid and token: a node removes what its token owns when it stops (and, as a
fallback, at interpreter exit), and every node removes what a dead process owned when it
starts, so a crashed run cannot leave the bridge's address range or stale namespaces behind.
Several nodes, in one process or many, can share the host.

The steps that change the host are generators of commands, driven either by asyncio (nodes) or
synchronously (the `atexit` fallback and `process_node_available`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import ipaddress
import json
import os
import random
import shutil
import signal
import sys
import tempfile
from collections.abc import Generator
from dataclasses import asdict
from dataclasses import dataclass
from pathlib import Path

from jobcore.testing._shared.hostcommands import HostCommandError
from jobcore.testing._shared.hostcommands import Result
from jobcore.testing._shared.hostcommands import checked
from jobcore.testing._shared.hostcommands import run
from jobcore.testing._shared.hostcommands import run_now
from jobcore.testing._shared.hostcommands import tool

BRIDGE = "jcbr0"
GATEWAY = "10.213.0.1"
NETWORK = ipaddress.ip_network("10.213.0.0/16")
STATE_DIR = Path("/run/jobcore-processnode")
LEASES = STATE_DIR / "leases"
NODE_DIRS = Path(tempfile.gettempdir()) / "jobcore-processnode"
"""Each node's files (volumes, hosts files, logs) in `<pid>-<random>`, removed once pid is gone."""
NETNS_PREFIX = "jc-"
VETH_PREFIX = "vjc"
REQUIRED_TOOLS = ("ip", "unshare", "nsenter", "mount", "sh")
_PROBE_SCRIPT = "mount --bind /etc/hosts /etc/hosts && echo jcprobe >/proc/sys/kernel/hostname"
"""What a pod's wrapper does first: bind mounts and a hostname of its own."""


Steps = Generator[list[str], Result, None]
"""Commands to run one after another; each command's result is sent back in."""


async def _drive(steps: Steps) -> None:
    with contextlib.suppress(StopIteration):
        argv = next(steps)
        while True:
            argv = steps.send(await run(*argv, check=False))


def _drive_now(steps: Steps) -> None:
    with contextlib.suppress(StopIteration):
        argv = next(steps)
        while True:
            argv = steps.send(run_now(*argv, check=False))


# The bridge --------------------------------------------------------------------------------


def _bridge_steps() -> Steps:
    """Create the bridge if missing; (re)assert its address and state, whatever a crash left."""
    if (yield ["ip", "-o", "link", "show", BRIDGE]).returncode != 0:
        created = yield ["ip", "link", "add", BRIDGE, "type", "bridge"]
        if created.returncode != 0 and "File exists" not in created.stderr:
            raise HostCommandError(f"ip link add {BRIDGE} type bridge: {created.stderr}")
    for argv in (
        ["ip", "addr", "replace", f"{GATEWAY}/{NETWORK.prefixlen}", "dev", BRIDGE],
        ["ip", "link", "set", BRIDGE, "up"],
    ):
        result = yield argv
        checked(result, argv)


# Sandboxes: one per pod --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sandbox:
    """A pod's network namespace, the host end of its veth, its address, and who owns them."""

    netns: str
    veth: str
    ip: str
    pid: int
    token: str

    @property
    def lease(self) -> Path:
        return LEASES / self.ip


def _lease(*, short: str, token: str) -> Sandbox:
    """Reserve a free address: a complete draft hard-linked to its name, which fails if taken.

    A reader therefore never sees a half-written lease, in this process or any other.
    """
    LEASES.mkdir(parents=True, exist_ok=True)
    taken = {p.name for p in LEASES.iterdir()}
    hosts = NETWORK.num_addresses - 2
    start = random.randrange(hosts)
    for i in range(hosts):
        ip = str(NETWORK.network_address + 1 + (start + i) % hosts)
        if ip == GATEWAY or ip in taken:
            continue
        sandbox = Sandbox(f"{NETNS_PREFIX}{short}", f"{VETH_PREFIX}{short}", ip, os.getpid(), token)
        draft = LEASES / f".{os.getpid()}-{ip}"
        draft.write_text(json.dumps(asdict(sandbox)))
        try:
            os.link(draft, sandbox.lease)
        except FileExistsError:
            continue
        finally:
            draft.unlink(missing_ok=True)
        return sandbox
    raise HostCommandError(f"no free address left in {NETWORK}")


def _create_steps(sandbox: Sandbox) -> Steps:
    ns = ["ip", "-n", sandbox.netns]
    for argv in (
        ["ip", "netns", "add", sandbox.netns],
        [
            "ip",
            "link",
            "add",
            sandbox.veth,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            sandbox.netns,
        ],
        ["ip", "link", "set", sandbox.veth, "master", BRIDGE, "up"],
        [*ns, "addr", "add", f"{sandbox.ip}/{NETWORK.prefixlen}", "dev", "eth0"],
        [*ns, "link", "set", "lo", "up"],
        [*ns, "link", "set", "eth0", "up"],
        [*ns, "route", "add", "default", "via", GATEWAY],
    ):
        checked((yield argv), argv)


async def create_sandbox(*, uid: str, token: str) -> Sandbox:
    """A new network namespace for the pod `uid`, wired to the bridge, with an address."""
    short = uid.replace("-", "")[:8]
    sandbox = await asyncio.to_thread(_lease, short=short, token=token)
    try:
        await _drive(_create_steps(sandbox))
    except BaseException:
        await destroy_sandbox(sandbox)
        raise
    return sandbox


def _kill_netns_steps(netns: str) -> Steps:
    """SIGKILL every process in the namespace, again until none is left (they may fork)."""
    for _ in range(50):
        listed = yield ["ip", "netns", "pids", netns]
        pids = [int(p) for p in listed.stdout.split()] if listed.returncode == 0 else []
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _destroy_steps(sandbox: Sandbox) -> Steps:
    """Kill what runs inside, delete the veth (at once, unlike the netns) and the netns."""
    yield from _kill_netns_steps(sandbox.netns)
    yield ["ip", "link", "delete", sandbox.veth]
    yield ["ip", "netns", "delete", sandbox.netns]
    sandbox.lease.unlink(missing_ok=True)


async def destroy_sandbox(sandbox: Sandbox) -> None:
    """Remove the sandbox and release its address; missing pieces are skipped."""
    await _drive(_destroy_steps(sandbox))


# Sweeping what is left behind ----------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_leases() -> list[Sandbox]:
    """Every lease; drafts left by dead processes are removed on the way."""
    sandboxes = []
    for path in LEASES.iterdir() if LEASES.is_dir() else ():
        if path.name.startswith("."):
            owner = path.name[1:].partition("-")[0]
            if owner.isdigit() and not _alive(int(owner)):
                path.unlink(missing_ok=True)
            continue
        with contextlib.suppress(OSError, ValueError, TypeError):
            sandboxes.append(Sandbox(**json.loads(path.read_text())))
    return sandboxes


def node_directory() -> Path:
    """A new directory for one node's files (blocking: run it in a thread)."""
    NODE_DIRS.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=NODE_DIRS))


def _sweep_directories() -> None:
    for directory in NODE_DIRS.glob("*-*") if NODE_DIRS.is_dir() else ():
        owner = directory.name.partition("-")[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(directory, ignore_errors=True)


def _sweep_steps(tokens: frozenset[str]) -> Steps:
    """Destroy the sandboxes of `tokens` and of dead owners; then orphaned netns and veths.

    A lease is written before its netns and veth exist and removed after they are gone, so a
    `jc-` netns or `vjc` veth that no lease names (read after listing them) belongs to nobody.
    """
    for sandbox in _read_leases():
        if sandbox.token in tokens or not _alive(sandbox.pid):
            yield from _destroy_steps(sandbox)
    netns = (yield ["ip", "netns", "list"]).stdout.splitlines()
    veths = (yield ["ip", "-o", "link", "show", "type", "veth"]).stdout.splitlines()
    leased = {sandbox.netns.removeprefix(NETNS_PREFIX) for sandbox in _read_leases()}
    for name in (line.split()[0] for line in netns if line.strip()):
        if name.startswith(NETNS_PREFIX) and name.removeprefix(NETNS_PREFIX) not in leased:
            yield from _kill_netns_steps(name)
            yield ["ip", "netns", "delete", name]
    for line in veths:  # "12: vjc0a1b2c3d@if3: <BROADCAST,..."
        name = line.split(":")[1].strip().split("@")[0] if line.count(":") >= 2 else ""
        if name.startswith(VETH_PREFIX) and name.removeprefix(VETH_PREFIX) not in leased:
            yield ["ip", "link", "delete", name]


async def sweep(*, tokens: frozenset[str] = frozenset()) -> None:
    await _drive(_sweep_steps(tokens))


_exit_cleanups: dict[str, Path] = {}


def _cleanup_at_exit() -> None:
    if not _exit_cleanups:
        return
    with contextlib.suppress(Exception):
        _drive_now(_sweep_steps(frozenset(_exit_cleanups)))
    for directory in _exit_cleanups.values():
        shutil.rmtree(directory, ignore_errors=True)
    _exit_cleanups.clear()


def clean_up_at_exit(token: str, directory: Path) -> None:
    """Remove the sandboxes of `token` and `directory` at interpreter exit, unless forgotten."""
    if not _exit_cleanups:
        atexit.unregister(_cleanup_at_exit)
        atexit.register(_cleanup_at_exit)
    _exit_cleanups[token] = directory


def forget_at_exit(token: str) -> None:
    _exit_cleanups.pop(token, None)


# The host ------------------------------------------------------------------------------------


@functools.cache
def process_node_available() -> str | None:
    """None when ProcessNode can run on this host, else why not (to skip tests with).

    Runs a few commands synchronously, once per process: call it at import or collection
    time, not from a running event loop.
    """
    if sys.platform != "linux":
        return f"ProcessNode needs Linux namespaces; this is {sys.platform}"
    if os.geteuid() != 0:
        return "ProcessNode needs root (network namespaces, veths, bind mounts)"
    missing = [name for name in REQUIRED_TOOLS if not shutil.which(name)]
    if missing:
        return f"ProcessNode needs {', '.join(missing)} on PATH"
    # Named outside the sweep's prefixes, so a concurrent node's sweep leaves them alone.
    probe = f"jcprobe-{os.getpid()}"
    veth = f"jcprb{os.getpid() % 10**7}"
    try:
        LEASES.mkdir(parents=True, exist_ok=True)
        _drive_now(_bridge_steps())
        for argv in (
            ["ip", "netns", "add", probe],
            ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", probe],
            [
                "ip",
                "netns",
                "exec",
                probe,
                "unshare",
                "--mount",
                "--uts",
                "--propagation",
                "private",
                "sh",
                "-c",
                _PROBE_SCRIPT,
            ],
            ["nsenter", "--version"],
        ):
            run_now(*argv)
    except (HostCommandError, OSError) as exc:
        return f"ProcessNode cannot set up a pod here: {exc}"
    finally:
        run_now("ip", "link", "delete", veth, check=False)
        run_now("ip", "netns", "delete", probe, check=False)
    return None


async def prepare_host() -> None:
    """Idempotent host set-up: the bridge, sshd's host keys and /run/sshd, stale leftovers.

    Installing packages is the caller's business (e.g. `apt-get install openssh-server
    openmpi-bin`); this only makes an installed sshd startable in a pod.
    """
    await _drive(_bridge_steps())
    await sweep()
    await asyncio.to_thread(_sweep_directories)
    await asyncio.to_thread(Path("/run/sshd").mkdir, mode=0o755, exist_ok=True)
    try:
        tool("sshd")
    except HostCommandError:
        return  # no sshd: no host keys needed
    await run(tool("ssh-keygen"), "-A")
