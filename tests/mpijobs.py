"""MPIJob manifests for the tests that need a plain job, not a particular spec."""

from __future__ import annotations

from typing import Any

from jobcore import Object
from tests.kindjobs import MPIJOB

MPIJOBS = MPIJOB.resource


def mpijob(namespace: str, name: str, *, replicas: int = 2, **spec: Any) -> Object:
    """An MPIJob of `replicas` workers running ./train; `spec` adds or replaces fields."""
    return MPIJOB.job(namespace, name, replicas=replicas, **spec)


def pods_of(names: list[str], *, replicas: int = 2) -> set[str]:
    """The pods MPIJobs of these names run: their workers and their launchers."""
    return {f"{n}-worker-{i}" for n in names for i in range(replicas)} | {
        f"{n}-launcher" for n in names
    }
