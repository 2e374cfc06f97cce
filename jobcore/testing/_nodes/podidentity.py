"""Who a process pod's containers run as, and the volume ownership a kubelet would give them.

A Pod's and its containers' `securityContext` (`runAsUser`, `runAsGroup`, `fsGroup`,
`supplementalGroups`) become the uid, gid and supplementary groups of the container's process;
the host's `/etc/passwd` stands in for the image's, which a real runtime reads for a uid's
primary group and home directory. With `fsGroup`, Secret, ConfigMap and emptyDir files get
that group and group read (write too, for emptyDir), as the kubelet's `SetVolumeOwnership` does;
without it they stay root's, so a non-root user cannot read a Secret's `0600` files there either.
"""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_READ_ONLY_MASK = 0o440
_READ_WRITE_MASK = 0o660
_DIRECTORY_MASK = stat.S_ISGID | 0o110


@dataclass(frozen=True, slots=True)
class Identity:
    """A container's uid, gid and supplementary groups."""

    uid: int = 0
    gid: int = 0
    groups: tuple[int, ...] = ()

    @property
    def default(self) -> bool:
        """Root with no extra groups: what a container without a securityContext runs as here."""
        return self == Identity()


def _user(uid: int) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwuid(uid)
    except KeyError:
        return None


def fs_group(pod: Mapping[str, Any]) -> int | None:
    group = (pod["spec"].get("securityContext") or {}).get("fsGroup")
    return None if group is None else int(group)


def identity(pod: Mapping[str, Any], container: Mapping[str, Any]) -> Identity:
    """The container's identity: its own securityContext over the Pod's.

    Without runAsGroup the gid is the uid's primary group in /etc/passwd, else 0, as a
    container runtime does with the image's; the groups are fsGroup and supplementalGroups.
    """
    pod_context = pod["spec"].get("securityContext") or {}
    context = container.get("securityContext") or {}
    uid = int(context.get("runAsUser", pod_context.get("runAsUser", 0)))
    gid = context.get("runAsGroup", pod_context.get("runAsGroup"))
    if gid is None:
        user = _user(uid)
        gid = user.pw_gid if user else 0
    groups = [fs_group(pod), *(pod_context.get("supplementalGroups") or ())]
    return Identity(uid, int(gid), tuple(dict.fromkeys(int(g) for g in groups if g is not None)))


def home(user: Identity) -> str:
    """The uid's home directory in /etc/passwd, else `/` (what a runtime sets HOME to)."""
    entry = _user(user.uid)
    return entry.pw_dir if entry else "/"


def privileges(user: Identity, setpriv: str) -> list[str]:
    """The `setpriv` command that drops from root to `user` before the container's command."""
    groups = ["--groups", ",".join(map(str, user.groups))] if user.groups else ["--clear-groups"]
    return [setpriv, "--reuid", str(user.uid), "--regid", str(user.gid), *groups, "--"]


def own_volume(directory: Path, group: int, *, read_only: bool) -> None:
    """Give a volume's tree to `group` with group read (and write), as the kubelet does for
    fsGroup; directories also get setgid and search (blocking: run it in a thread)."""
    mask = _READ_ONLY_MASK if read_only else _READ_WRITE_MASK
    for path in [directory, *directory.rglob("*")]:
        mode = path.stat().st_mode
        os.chown(path, -1, group)
        extra = _DIRECTORY_MASK if stat.S_ISDIR(mode) else 0
        path.chmod(stat.S_IMODE(mode) | mask | extra)
