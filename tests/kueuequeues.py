"""Kueue's side in tests: the stand-in running, and a team's queues (a flavour, a ClusterQueue
with a cpu quota in it, a LocalQueue), as a cluster's administrator sets them up."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from jobcore import Client
from jobcore.testing import KUEUE_CLUSTER_QUEUES
from jobcore.testing import KUEUE_LOCAL_QUEUES
from jobcore.testing import KUEUE_RESOURCE_FLAVORS
from jobcore.testing import KueueStandIn
from jobcore.testing import background
from jobcore.testing import install_kueue_crds


@contextlib.asynccontextmanager
async def kueue(client: Client, **options: Any) -> AsyncIterator[KueueStandIn]:
    await install_kueue_crds(client)
    standin = KueueStandIn(client, **options)
    async with background(standin.run()):
        yield standin


async def flavor(client: Client, name: str, **node_labels: str) -> None:
    body = {"apiVersion": KUEUE_RESOURCE_FLAVORS.api_version, "kind": "ResourceFlavor"}
    spec = {"nodeLabels": node_labels} if node_labels else {}
    await client.create(KUEUE_RESOURCE_FLAVORS, {**body, "metadata": {"name": name}, "spec": spec})


async def cluster_queue(
    client: Client, name: str, quotas: dict[str, str], *, preemption: str = "Never"
) -> None:
    """A ClusterQueue with one resource group covering cpu: `quotas` is flavour: cpu."""
    flavors = [
        {"name": f, "resources": [{"name": "cpu", "nominalQuota": q}]} for f, q in quotas.items()
    ]
    spec = {
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
        "preemption": {"withinClusterQueue": preemption},
    }
    await client.create(
        KUEUE_CLUSTER_QUEUES,
        {
            "apiVersion": KUEUE_CLUSTER_QUEUES.api_version,
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": spec,
        },
    )


async def local_queue(client: Client, namespace: str, name: str, cq: str) -> None:
    await client.create(
        KUEUE_LOCAL_QUEUES,
        {
            "apiVersion": KUEUE_LOCAL_QUEUES.api_version,
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cq},
        },
    )


async def team_queue(client: Client, namespace: str, cpu: str, *, preemption: str = "Never") -> str:
    """A flavour, a ClusterQueue of `cpu` in it, and the namespace's LocalQueue "team" in
    that ClusterQueue; returns the ClusterQueue's name (cluster-wide names carry the
    test's namespace)."""
    cq, default = f"cq-{namespace}", f"default-{namespace}"
    await flavor(client, default)
    await cluster_queue(client, cq, {default: cpu}, preemption=preemption)
    await local_queue(client, namespace, "team", cq)
    return cq
