"""What drives and checks the real cluster: kubectl as its admin, and containerd's ctr."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from jobcore.testing._realcluster.layout import NODE_NAME
from jobcore.testing._realcluster.layout import Layout
from jobcore.testing._shared.hostcommands import Result
from jobcore.testing._shared.hostcommands import run
from jobcore.testing._shared.hostcommands import tool

IMPORTED = "jobcore-imported"
"""A folder in containerd's root: a stamp per imported tarball (its name and mtime)."""


class ClusterCommands:
    """kubectl and ctr pointed at one cluster."""

    def __init__(self, layout: Layout, assets: Path) -> None:
        self._layout = layout
        self._kubectl = str(assets / "kubectl")

    async def kubectl(self, *args: str, check: bool = True) -> Result:
        return await run(
            self._kubectl, f"--kubeconfig={self._layout.admin_kubeconfig}", *args, check=check
        )

    async def ctr(self, *args: str, check: bool = True) -> Result:
        socket = str(self._layout.containerd_socket)
        return await run(tool("ctr"), "--address", socket, "-n", "k8s.io", *args, check=check)

    async def api_ready(self) -> bool:
        result = await self.kubectl("get", "--raw", "/readyz", check=False)
        return result.returncode == 0 and result.stdout.strip() == "ok"

    async def containerd_ready(self) -> bool:
        return (await self.ctr("version", check=False)).returncode == 0

    async def node_ready(self) -> bool:
        result = await self.kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
        if result.returncode != 0:
            return False
        conditions = json.loads(result.stdout)["status"].get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    async def default_token(self, namespace: str = "default") -> bool:
        """Whether the namespace's default ServiceAccount has its token Secret (1.20's kind)."""
        result = await self.kubectl("get", "secrets", "-n", namespace, "-o", "name", check=False)
        return "secret/default-token-" in result.stdout

    async def no_tasks(self) -> bool:
        """Whether containerd runs no container, pause sandboxes included."""
        result = await self.ctr("tasks", "ls", "-q", check=False)
        return result.returncode != 0 or not result.stdout.strip()

    async def remove_containers(self) -> None:
        """Kill and delete what kubelet left running (it is stopped by now)."""
        for task in (await self.ctr("tasks", "ls", "-q", check=False)).stdout.split():
            await self.ctr("tasks", "kill", "-s", "KILL", task, check=False)
        for task in (await self.ctr("tasks", "ls", "-q", check=False)).stdout.split():
            await self.ctr("tasks", "delete", "-f", task, check=False)
        for container in (await self.ctr("containers", "ls", "-q", check=False)).stdout.split():
            await self.ctr("containers", "delete", container, check=False)

    async def import_images(self, folder: Path) -> list[str]:
        """Import each `*.tar` of `folder` new or changed since its last import; their names."""
        imported = []
        for tarball, stamp in _changed(folder, self._layout.containerd_root / IMPORTED):
            await self.ctr("images", "import", str(tarball))
            for old in stamp.parent.glob(f"{tarball.name}.*"):
                old.unlink()
            stamp.touch()
            imported.append(tarball.name)
        return imported

    async def apply_dns_service(self, service_ip: str, host_ip: str, port: int) -> None:
        """Service kube-system/kube-dns at `service_ip`:53, its endpoint dnsmasq on the host."""
        labels = {"k8s-app": "kube-dns"}
        meta = {"name": "kube-dns", "namespace": "kube-system", "labels": labels}
        ports = [("dns", "UDP"), ("dns-tcp", "TCP")]
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {
                "clusterIP": service_ip,
                "ports": [
                    {"name": n, "port": 53, "protocol": p, "targetPort": port} for n, p in ports
                ],
            },
        }
        endpoints = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": meta,
            "subsets": [
                {
                    "addresses": [{"ip": host_ip}],
                    "ports": [{"name": n, "port": port, "protocol": p} for n, p in ports],
                }
            ],
        }
        path = self._layout.etc / "kube-dns.yaml"
        path.write_text(yaml.safe_dump_all([service, endpoints]))
        await self.kubectl("apply", "-f", str(path))


def _changed(folder: Path, stamps: Path) -> list[tuple[Path, Path]]:
    """The tarballs of `folder` without a stamp of their current mtime, and that stamp."""
    stamps.mkdir(parents=True, exist_ok=True)
    found = []
    for tarball in sorted(folder.glob("*.tar")):
        stamp = stamps / f"{tarball.name}.{tarball.stat().st_mtime_ns}"
        if not stamp.is_file():
            found.append((tarball, stamp))
    return found
