"""Kueue's side for a test or a benchmark: the stand-in running, and queues set up.

The queues are made as a cluster's administrator makes them: a flavour, a ClusterQueue with
a cpu quota in flavours, a namespace's LocalQueue.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from jobcore._runtime.client import Client
from jobcore.testing._background import background
from jobcore.testing._kueue.api import CLUSTER_QUEUES
from jobcore.testing._kueue.api import LOCAL_QUEUES
from jobcore.testing._kueue.api import RESOURCE_FLAVORS
from jobcore.testing._kueue.crds import install_kueue_crds
from jobcore.testing._kueue.standin import KueueStandIn


@contextlib.asynccontextmanager
async def kueue_running(client: Client, **options: Any) -> AsyncIterator[KueueStandIn]:
    """Kueue's CRDs installed and the stand-in (`options` are its own) running, for the block."""
    await install_kueue_crds(client)
    standin = KueueStandIn(client, **options)
    async with background(standin.run()):
        yield standin


async def create_flavor(client: Client, name: str, **node_labels: str) -> None:
    """A ResourceFlavor whose nodes carry `node_labels`."""
    body = {"apiVersion": RESOURCE_FLAVORS.api_version, "kind": "ResourceFlavor"}
    spec = {"nodeLabels": node_labels} if node_labels else {}
    await client.create(RESOURCE_FLAVORS, {**body, "metadata": {"name": name}, "spec": spec})


async def create_cluster_queue(
    client: Client, name: str, quotas: dict[str, str], *, preemption: str = "Never"
) -> None:
    """A ClusterQueue with one resource group covering cpu: `quotas` is flavour: cpu, and
    `preemption` its withinClusterQueue policy."""
    flavors = [
        {"name": f, "resources": [{"name": "cpu", "nominalQuota": q}]} for f, q in quotas.items()
    ]
    spec = {
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
        "preemption": {"withinClusterQueue": preemption},
    }
    body = {"apiVersion": CLUSTER_QUEUES.api_version, "kind": "ClusterQueue"}
    await client.create(CLUSTER_QUEUES, {**body, "metadata": {"name": name}, "spec": spec})


async def create_local_queue(client: Client, namespace: str, name: str, cluster_queue: str) -> None:
    """The namespace's LocalQueue `name`, in `cluster_queue`."""
    body = {"apiVersion": LOCAL_QUEUES.api_version, "kind": "LocalQueue"}
    meta = {"name": name, "namespace": namespace}
    await client.create(
        LOCAL_QUEUES, {**body, "metadata": meta, "spec": {"clusterQueue": cluster_queue}}
    )
