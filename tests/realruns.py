"""Running a job for real to its end, on a ProcessNode or in the real cluster, for the real-tier
tests of every kind."""

from __future__ import annotations

from typing import Any
from typing import Protocol

from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.testing import wait_for_end


class Logs(Protocol):
    """Where a container's output is read: a ProcessNode, or the real cluster's kubelet."""

    def logs(self, namespace: str, pod: str, container: str) -> str: ...


async def run_to_end(
    client: Client,
    node: Logs,
    resource: Resource,
    job: Object,
    *,
    container: str,
    timeout: float = 90,
) -> tuple[dict[str, Any], str]:
    """Create `job`; once it ended, its status and its launcher's output (`container`'s).

    A job that does not end in `timeout` fails the test, showing the launcher's output.
    """
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    await client.create(resource, job)

    def log() -> str:
        return node.logs(namespace, f"{name}-launcher", container)

    status: dict[str, Any] = await wait_for_end(
        client, resource, namespace, name, timeout=timeout, explain=log
    )
    return status, log()
