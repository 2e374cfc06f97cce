"""Cluster DNS for the real cluster: dnsmasq serving a hosts file that this module keeps current.

Debian has no CoreDNS. `python -m jobcore.testing._realcluster.dns` reads Services, Endpoints
and Pods once a second and writes the records a pod looks up, then tells dnsmasq (SIGHUP) to
reread them:
`svc.ns.svc.DOMAIN` (the ClusterIP, or every ready endpoint of a headless Service, not-ready ones
too under publishNotReadyAddresses), `hostname.svc.ns.svc.DOMAIN` for a pod with a hostname and
a subdomain, and `a-b-c-d.ns.pod.DOMAIN`. Not served: SRV records, ExternalName, IPv6.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import struct
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any


def records(services: list[Any], endpoints: list[Any], pods: list[Any], domain: str) -> set[str]:
    """hosts-file lines (`IP NAME`) for these objects."""
    by_name = {(e["metadata"]["namespace"], e["metadata"]["name"]): e for e in endpoints}
    lines = set()
    for service in services:
        namespace, name, spec = (
            service["metadata"]["namespace"],
            service["metadata"]["name"],
            service["spec"],
        )
        fqdn = f"{name}.{namespace}.svc.{domain}"
        if spec.get("type") == "ExternalName":
            continue
        if spec.get("clusterIP") not in (None, "", "None"):
            lines.add(f"{spec['clusterIP']} {fqdn}")
            continue
        for subset in (by_name.get((namespace, name)) or {}).get("subsets") or []:
            addresses = list(subset.get("addresses") or [])
            if spec.get("publishNotReadyAddresses"):
                addresses += subset.get("notReadyAddresses") or []
            for address in addresses:
                lines.add(f"{address['ip']} {fqdn}")
                if address.get("hostname"):
                    lines.add(f"{address['ip']} {address['hostname']}.{fqdn}")
    for pod in pods:
        ip = (pod.get("status") or {}).get("podIP")
        if ip and not pod["spec"].get("hostNetwork"):
            lines.add(f"{ip} {ip.replace('.', '-')}.{pod['metadata']['namespace']}.pod.{domain}")
    return lines


def lookup(name: str, server: str, port: int, timeout: float = 1.0) -> list[str]:
    """The A records `server` answers for `name` (empty when it answers none)."""
    question = b"".join(bytes([len(part)]) + part.encode() for part in name.rstrip(".").split("."))
    query = b"\x4a\x43\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + question + b"\x00\x00\x01\x00\x01"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.sendto(query, (server, port))
        answer = sock.recv(4096)
    count = struct.unpack("!H", answer[6:8])[0]
    offset, found = len(query), []
    for _ in range(count):
        offset += 2 if answer[offset] & 0xC0 == 0xC0 else len(question) + 1
        kind, _, _, length = struct.unpack("!HHIH", answer[offset : offset + 10])
        offset += 10
        if kind == 1:
            found.append(socket.inet_ntoa(answer[offset : offset + length]))
        offset += length
    return found


def _watch(api: str, pki: Path, hosts: Path, dnsmasq_pid: Path, domain: str) -> None:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

    def items(path: str) -> list[Any]:
        with urllib.request.urlopen(
            f"{api}{path}?resourceVersion=0", context=context, timeout=10
        ) as r:
            return list(json.load(r)["items"])

    written = None
    while True:
        try:
            lines = records(
                items("/api/v1/services"), items("/api/v1/endpoints"), items("/api/v1/pods"), domain
            )
            text = "\n".join(sorted(lines)) + "\n"
            if text != written:
                draft = hosts.with_suffix(".tmp")
                draft.write_text(text)
                draft.chmod(0o644)
                os.replace(draft, hosts)
                os.kill(int(dnsmasq_pid.read_text()), signal.SIGHUP)
                written = text
        except Exception as exc:  # the API server may be restarting: keep going
            print(f"cluster dns: {exc!r}", file=sys.stderr, flush=True)
        time.sleep(1)


if __name__ == "__main__":
    api_url, pki_dir, hosts_file, pid_file, cluster_domain = sys.argv[1:6]
    _watch(api_url, Path(pki_dir), Path(hosts_file), Path(pid_file), cluster_domain)
