"""Run k3s in Docker (testcontainers) as the alternative to envtest: a real node and scheduler."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

K3S_IMAGE = "rancher/k3s:v1.31.4-k3s1"


def docker_available() -> bool:
    """Whether a Docker engine answers, asked with a short timeout."""
    try:
        import docker  # type: ignore[import-untyped]  # noqa: PLC0415 - only with the k3s backend

        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


@dataclass
class K3sCluster:
    """A running k3s container and an admin kubeconfig for it."""

    kubeconfig_path: str
    _container: Any
    _dir: Path

    async def stop(self) -> None:
        try:
            await asyncio.to_thread(self._container.stop)
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)


async def start_k3s(image: str = K3S_IMAGE) -> K3sCluster:
    """Start k3s and wait for its node controller; raises RuntimeError without Docker."""
    if not docker_available():
        raise RuntimeError("the k3s backend needs a Docker engine; none answers here")
    return await asyncio.to_thread(_start, image)


def _start(image: str) -> K3sCluster:
    from testcontainers.community.k3s import K3SContainer  # noqa: PLC0415 - imports docker

    container = K3SContainer(image).start()
    work = Path(tempfile.mkdtemp(prefix="jobcore-k3s-"))
    try:
        (work / "kubeconfig").write_text(container.config_yaml())
    except BaseException:
        container.stop()
        shutil.rmtree(work, ignore_errors=True)
        raise
    return K3sCluster(str(work / "kubeconfig"), container, work)
