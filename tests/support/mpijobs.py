"""MPIJob manifests for the tests that need a plain job, not a particular spec."""

from __future__ import annotations

from typing import Any

from jobcore import Client
from jobcore import Object
from jobcore.testing import wait_for_deletion
from jobcore.testing import wait_for_end
from tests.support.kindjobs import MPIJOB

MPIJOBS = MPIJOB.resource


def mpijob(namespace: str, name: str, *, replicas: int = 2, **spec: Any) -> Object:
    """An MPIJob of `replicas` workers running ./train; `spec` adds or replaces fields."""
    return MPIJOB.job(namespace, name, replicas=replicas, **spec)


def pods_of(names: list[str], *, replicas: int = 2) -> set[str]:
    """The pods MPIJobs of these names run: their workers and their launchers."""
    return {f"{n}-worker-{i}" for n in names for i in range(replicas)} | {
        f"{n}-launcher" for n in names
    }


async def run_to_end(client: Client, namespace: str, name: str) -> Any:
    """Create the MPIJob `name` and wait until it ends; return its status."""
    await client.create(MPIJOBS, mpijob(namespace, name))
    return await wait_for_end(client, MPIJOBS, namespace, name)


async def expire(client: Client, namespace: str, name: str) -> None:
    """Give the ended MPIJob `name` a TTL of 1 s and wait until it is deleted."""
    ttl = {"spec": {"runPolicy": {"ttlSecondsAfterFinished": 1}}}
    await client.patch(MPIJOBS, name, ttl, namespace)
    await wait_for_deletion(client, MPIJOBS, namespace, name, timeout=15)
