"""What the real cluster changes on the host, saved before and put back after.

kubelet, kube-proxy and the CNI bridge plugin set sysctls, add iptables chains, network
namespaces, mounts, cgroups and a bridge. `save` writes the host's state to a folder only when
none is saved there yet, so after a crashed run the next clean-up restores the state from
before the first run, not the crashed run's leftovers.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import shutil
from pathlib import Path

from jobcore.testing._realcluster.layout import BRIDGE
from jobcore.testing._realcluster.layout import Layout
from jobcore.testing._shared.hostcommands import run
from jobcore.testing._shared.hostcommands import tool

SYSCTLS = (
    "net.ipv4.ip_forward",
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.ipv4.conf.all.route_localnet",
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
)
_CHAIN = re.compile(r"^:((?:KUBE|CNI)-\S+) ", re.M)
_BUILTIN_JUMP = re.compile(r"^-A (?:INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j (\S+)", re.M)
_TABLES = ("nat", "filter", "mangle")


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


async def save(layout: Layout) -> None:
    """Record sysctls, iptables chains and network namespaces, unless already recorded."""
    saved = layout.saved
    if (saved / "complete").is_file():
        return
    saved.mkdir(parents=True, exist_ok=True)
    values = []
    for name in SYSCTLS:
        with contextlib.suppress(OSError):
            values.append(f"{name}={_sysctl_path(name).read_text().strip()}")
    (saved / "sysctls").write_text("\n".join(values) + "\n")
    for program in ("iptables", "ip6tables"):
        dump = await run(tool(f"{program}-save"), check=False)
        (saved / program).write_text(dump.stdout)
    (saved / "netns").write_text("\n".join(_namespaces()))
    (saved / "complete").write_text("")


async def restore(layout: Layout) -> None:
    """Undo what the cluster left: mounts, namespaces, bridge, chains, cgroups, sysctls."""
    roots = (layout.kubelet_root, layout.containerd_root, layout.containerd_state)
    for mount in _mounts_under(roots):
        await run("umount", "-l", mount, check=False)
    saved = layout.saved
    before = set(_read(saved / "netns").split())
    for name in _namespaces():
        if name.startswith("cni-") and name not in before:
            await run("ip", "netns", "delete", name, check=False)
    await run("ip", "link", "delete", BRIDGE, check=False)
    for program in ("iptables", "ip6tables"):
        await _delete_new_chains(program, _read(saved / program))
    _remove_cgroups()
    for line in _read(saved / "sysctls").splitlines():
        name, _, value = line.partition("=")
        with contextlib.suppress(OSError):
            _sysctl_path(name).write_text(value)
    shutil.rmtree(saved, ignore_errors=True)


def _namespaces() -> list[str]:
    folder = Path("/run/netns")
    return sorted(path.name for path in folder.iterdir()) if folder.is_dir() else []


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _mounts_under(roots: tuple[Path, ...]) -> list[str]:
    """Mount points below `roots`, deepest first."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if any(point == str(root) or point.startswith(f"{root}/") for root in roots):
            found.append(point)
    return sorted(found, reverse=True)


async def _delete_new_chains(program: str, before: str) -> None:
    """Delete the KUBE-* and CNI-* chains that were not there before, and the jumps to them."""
    old = set(_CHAIN.findall(before))
    for table in _TABLES:
        dump = (await run(tool(f"{program}-save"), "-t", table, check=False)).stdout
        new = set(_CHAIN.findall(dump)) - old
        if not new:
            continue
        for rule in dump.splitlines():
            jump = _BUILTIN_JUMP.match(rule)
            if jump and jump.group(1) in new:
                await run(tool(program), "-t", table, "-D", *shlex.split(rule)[1:], check=False)
        for flag in ("-F", "-X"):
            for chain in sorted(new):
                await run(tool(program), "-t", table, flag, chain, check=False)


def _remove_cgroups() -> None:
    """kubelet's `kubepods` cgroups in every hierarchy, innermost first (empty once pods end)."""
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        top = hierarchy / "kubepods"
        if not top.is_dir():
            continue
        for folder in sorted(top.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if folder.is_dir():
                with contextlib.suppress(OSError):
                    folder.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()
