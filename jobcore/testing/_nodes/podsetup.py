"""What a process pod's containers see, prepared on the host: volumes, env, hosts, mount script.

Secret and ConfigMap volumes become files with their modes, emptyDir a directory, hostPath the
host's own path; other volume types are skipped with a warning. With the Pod's fsGroup, volumes
are owned as a kubelet owns them (`podidentity`). The per-pod hosts file lists
the Pod itself and every Ready Pod of its namespace that has a hostname and a subdomain, as a
cluster's DNS would; it is rewritten in place (a bind mount pins the inode, so a rename would
go unseen). The generated wrapper script runs inside the pod's namespaces before the container
command: hostname, bind mounts, hosts and resolv.conf, working directory, then `exec` as the
container's user.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import shlex
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobcore import JobcoreError
from jobcore._jobs.kind import DEFAULT_CLUSTER_DOMAIN
from jobcore._runtime.client import Client
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.resources import CONFIGMAPS
from jobcore._runtime.resources import SECRETS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource
from jobcore.jobs import is_ready
from jobcore.testing._nodes import podidentity
from jobcore.testing._shared.hostcommands import tool

DEFAULT_MESSAGE_PATH = "/dev/termination-log"
"""Where a container writes its termination message unless it says otherwise."""
RESOLV_CONF = "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"
"""No DNS server: a name missing from the hosts file fails at once (127.0.0.1:53 refuses)
instead of after the host resolver's timeouts (20 s measured), unreachable from a pod's netns."""
HOSTNAME_MAX = 63
_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class NotReadyError(JobcoreError):
    """Something the Pod needs does not exist yet (a Secret, a ConfigMap): try again later."""


@dataclass(frozen=True, slots=True)
class Mount:
    """A bind mount of a host path into a container."""

    source: Path
    target: str
    read_only: bool
    is_file: bool


class Sources:
    """The Pod's Secrets and ConfigMaps, each read from the API once per set-up."""

    def __init__(self, client: Client, namespace: str) -> None:
        self._client = client
        self._namespace = namespace
        self._cache: dict[tuple[str, str], Object | None] = {}

    async def data(self, resource: Resource, name: str, *, optional: bool) -> dict[str, bytes]:
        """The object's decoded data; {} when optional and missing, else NotReadyError."""
        key = (resource.plural, name)
        if key not in self._cache:
            try:
                self._cache[key] = await self._client.get(resource, name, self._namespace)
            except NotFoundError:
                self._cache[key] = None
        obj = self._cache[key]
        if obj is None:
            if optional:
                return {}
            raise NotReadyError(f'{resource.kind.lower()} "{name}" not found')
        if resource == SECRETS:
            data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
            data.update({k: v.encode() for k, v in (obj.get("stringData") or {}).items()})
            return data
        data = {k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()}
        data.update({k: v.encode() for k, v in (obj.get("data") or {}).items()})
        return data


# Volumes ---------------------------------------------------------------------------------


async def volume_files(
    sources: Sources, volume: Mapping[str, Any]
) -> tuple[str, dict[str, tuple[bytes, int]] | Path | None]:
    """What to put in the volume: `(kind, {path: (content, mode)})`, a host path, or None."""
    for kind, resource, name_field in (
        ("secret", SECRETS, "secretName"),
        ("configMap", CONFIGMAPS, "name"),
    ):
        source = volume.get(kind)
        if source is None:
            continue
        data = await sources.data(
            resource, source.get(name_field, ""), optional=bool(source.get("optional"))
        )
        mode = int(source.get("defaultMode", 0o644))
        items = source.get("items")
        if not items:
            return kind, {key: (value, mode) for key, value in data.items()}
        files = {}
        for item in items:
            if item["key"] not in data:
                if source.get("optional"):
                    continue
                raise NotReadyError(f'{kind} "{source.get(name_field)}" has no key {item["key"]}')
            files[item["path"]] = (data[item["key"]], int(item.get("mode", mode)))
        return kind, files
    if "emptyDir" in volume:
        return "emptyDir", {}
    if "hostPath" in volume:
        return "hostPath", Path(volume["hostPath"]["path"])
    return next((k for k in volume if k != "name"), "unknown"), None


async def volumes(
    sources: Sources, pod: Object, directory: Path
) -> tuple[dict[str, tuple[Path, bool]], list[str]]:
    """Each volume's host path and whether it is read-only; the volumes skipped, and why."""
    found: dict[str, tuple[Path, bool]] = {}
    skipped = []
    group = podidentity.fs_group(pod)
    for volume in pod["spec"].get("volumes") or ():
        kind, files = await volume_files(sources, volume)
        if isinstance(files, Path):  # hostPath
            found[volume["name"]] = (files, False)
        elif files is None:
            skipped.append(f"{volume['name']} ({kind})")
        else:
            path = directory / volume["name"]
            writable = kind == "emptyDir"
            mode = 0o777 if writable else 0o755
            await asyncio.to_thread(write_volume, path, files, mode=mode)
            if group is not None:
                await asyncio.to_thread(podidentity.own_volume, path, group, read_only=not writable)
            found[volume["name"]] = (path, not writable)
    return found, skipped


def write_volume(directory: Path, files: Mapping[str, tuple[bytes, int]], *, mode: int) -> None:
    """Materialise one volume as a directory of files (blocking: run it in a thread)."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(mode)
    for relative, (content, file_mode) in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        path.chmod(file_mode)


def container_mounts(
    container: Mapping[str, Any], volumes: Mapping[str, tuple[Path, bool]]
) -> list[Mount]:
    """The container's bind mounts, parents first; mounts of skipped volumes are left out."""
    mounts = []
    for mount in container.get("volumeMounts") or ():
        volume = volumes.get(mount["name"])
        if volume is None:
            continue
        path, read_only = volume
        source = path / mount["subPath"] if mount.get("subPath") else path
        mounts.append(
            Mount(
                source=source,
                target=mount["mountPath"],
                read_only=read_only or bool(mount.get("readOnly")),
                is_file=source.is_file(),
            )
        )
    mounts.sort(key=lambda m: len(Path(m.target).parts))
    return mounts


# Environment -----------------------------------------------------------------------------


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: known names replaced, `$$` escapes, the rest kept."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        return env.get(name, match.group(0))

    return _VAR_REF.sub(replace, text)


def _field(pod: Object, path: str, ip: str, host_ip: str) -> str:
    meta = pod["metadata"]
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": pod["spec"].get("nodeName"),
        "spec.serviceAccountName": pod["spec"].get("serviceAccountName"),
        "status.podIP": ip,
        "status.podIPs": ip,
        "status.hostIP": host_ip,
    }
    if path in simple:
        return str(simple[path] or "")
    found = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if found:
        return str((meta.get(found.group(1)) or {}).get(found.group(2), ""))
    raise NotReadyError(f"fieldRef {path} is not supported by ProcessNode")


async def environment(
    sources: Sources,
    pod: Object,
    container: Mapping[str, Any],
    *,
    base: Mapping[str, str],
    ip: str,
    host_ip: str,
) -> tuple[dict[str, str], list[str]]:
    """The container's environment over `base`, and the variables that were skipped."""
    env = dict(base)
    skipped = []
    for source in container.get("envFrom") or ():
        for kind, resource in (("configMapRef", CONFIGMAPS), ("secretRef", SECRETS)):
            if kind in source:
                ref = source[kind]
                data = await sources.data(
                    resource, ref.get("name", ""), optional=bool(ref.get("optional"))
                )
                prefix = source.get("prefix", "")
                env.update({prefix + k: v.decode(errors="replace") for k, v in data.items()})
    for var in container.get("env") or ():
        name, value_from = var["name"], var.get("valueFrom")
        if value_from is None:
            env[name] = expand(str(var.get("value", "")), env)
        elif "fieldRef" in value_from:
            env[name] = _field(pod, value_from["fieldRef"]["fieldPath"], ip, host_ip)
        elif "secretKeyRef" in value_from or "configMapKeyRef" in value_from:
            secret = "secretKeyRef" in value_from
            ref = value_from["secretKeyRef" if secret else "configMapKeyRef"]
            optional = bool(ref.get("optional"))
            data = await sources.data(
                SECRETS if secret else CONFIGMAPS, ref.get("name", ""), optional=optional
            )
            if ref["key"] in data:
                env[name] = data[ref["key"]].decode(errors="replace")
            elif not optional:
                raise NotReadyError(f'key {ref["key"]} of "{ref.get("name")}" not found')
        else:
            skipped.append(f"{container['name']}:{name}")
    return env, skipped


# Hosts file ------------------------------------------------------------------------------

Record = tuple[str, tuple[str, ...]]
"""An address and the names that resolve to it."""


def hostname(pod: Object) -> str:
    return str(pod["spec"].get("hostname") or pod["metadata"]["name"])[:HOSTNAME_MAX]


def _names(pod: Object) -> tuple[str, ...]:
    """`<h>.<sub>.<ns>.svc.cluster.local <h>.<sub>.<ns>.svc <h>.<sub>.<ns> <h>.<sub> <h>` for a
    Pod with hostname and subdomain: its name in the default cluster domain and the shorter
    forms a search list completes."""
    host, sub = hostname(pod), pod["spec"].get("subdomain")
    if not sub:
        return (host,)
    fqdn = f"{host}.{sub}.{pod['metadata']['namespace']}"
    return (f"{fqdn}.svc.{DEFAULT_CLUSTER_DOMAIN}", f"{fqdn}.svc", fqdn, f"{host}.{sub}", host)


def dns_records(pods: Iterable[Object]) -> dict[str, tuple[Record, ...]]:
    """Per namespace, the Ready Pods with hostname, subdomain and an address, sorted."""
    records: dict[str, list[Record]] = {}
    for pod in pods:
        spec, ip = pod["spec"], (pod.get("status") or {}).get("podIP")
        if spec.get("hostname") and spec.get("subdomain") and ip and is_ready(pod):
            records.setdefault(pod["metadata"]["namespace"], []).append((ip, _names(pod)))
    return {ns: tuple(sorted(found)) for ns, found in records.items()}


def hosts_file(pod: Object, ip: str, neighbours: Iterable[Record]) -> str:
    """localhost, the Pod's own names, its hostAliases, then its Ready neighbours."""
    own = tuple(dict.fromkeys((*_names(pod), pod["metadata"]["name"])))
    lines = [
        "# Kubernetes-managed hosts file (jobcore ProcessNode).",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        f"{ip}\t{' '.join(own)}",
    ]
    for alias in pod["spec"].get("hostAliases") or ():
        lines.append(f"{alias['ip']}\t{' '.join(alias.get('hostnames') or ())}")
    lines += [f"{addr}\t{' '.join(names)}" for addr, names in neighbours if addr != ip]
    return "\n".join(lines) + "\n"


def write_in_place(path: Path, text: str) -> None:
    """Overwrite the file's content keeping its inode (blocking: run it in a thread).

    New content is written over the old and the rest cut off, so a reader never sees an
    empty file; a rename would leave bind mounts of the old inode stale.
    """
    data = text.encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


# The wrapper -----------------------------------------------------------------------------


def wrapper_script(
    *,
    host: str,
    mounts: Sequence[Mount],
    hosts: Path,
    resolv: Path,
    working_dir: str | None,
    started: Path,
    user: podidentity.Identity,
    message: Sequence[Mount] = (),
) -> str:
    """The script run in the pod's namespaces; it ends with `exec "$@"` (the command), through
    `setpriv` unless the container runs as root with no extra groups.

    Mount targets are created first, on the host's file system (a bind mount needs one);
    they stay there, empty, after the pod is gone. A non-root container without a workingDir
    starts in `/`, as in an image without WORKDIR (the node's own folder is root's).
    """
    q = shlex.quote
    mkdir, mount = q(tool("mkdir")), q(tool("mount"))
    lines = [
        "#!/bin/sh",
        "# Generated by jobcore's ProcessNode: enter the pod's view, then run the container.",
        "set -eu",
        f"echo {q(host)} >/proc/sys/kernel/hostname",
    ]
    for m in [*mounts, Mount(hosts, "/etc/hosts", False, True), *message]:
        target = q(m.target)
        if m.is_file:
            parent = q(str(Path(m.target).parent))
            lines.append(f"[ -e {target} ] || {{ {mkdir} -p {parent} && : >{target}; }}")
        else:
            lines.append(f"[ -d {target} ] || {mkdir} -p {target}")
        lines.append(f"{mount} --bind {q(str(m.source))} {target}")
        if m.read_only:
            lines.append(f"{mount} -o remount,bind,ro {target}")
    lines += [
        f"{mount} --bind {q(str(resolv))} /etc/resolv.conf",
        f"{mkdir} -p -m 0755 /run/sshd",
    ]
    if working_dir:
        lines.append(f"{mkdir} -p {q(working_dir)} && cd {q(working_dir)}")
    elif not user.default:
        lines.append("cd /")
    drop = "" if user.default else shlex.join(podidentity.privileges(user, tool("setpriv"))) + " "
    lines += [f": >{q(str(started))}", f'exec {drop}"$@"']
    return "\n".join(lines) + "\n"


def write_wrapper(
    path: Path,
    *,
    pod: Object,
    container: Mapping[str, Any],
    volumes: Mapping[str, tuple[Path, bool]],
    hosts: Path,
    resolv: Path,
    started: Path,
    message_file: Path | None = None,
) -> None:
    """Write the container's wrapper script, executable (blocking: run it in a thread), with
    `message_file` (created empty, writable by any user) at its terminationMessagePath."""
    message = []
    if message_file is not None:
        message_file.touch(mode=0o666)
        message_file.chmod(0o666)
        target = str(container.get("terminationMessagePath") or DEFAULT_MESSAGE_PATH)
        message.append(Mount(message_file, target, False, True))
    script = wrapper_script(
        host=hostname(pod),
        mounts=container_mounts(container, volumes),
        hosts=hosts,
        resolv=resolv,
        working_dir=container.get("workingDir"),
        started=started,
        user=podidentity.identity(pod, container),
        message=message,
    )
    path.write_text(script)
    path.chmod(0o755)
