"""Kueue's side for a test or a benchmark: the stand-in running, and queues set up.

The queues are made as a cluster's administrator makes them: a flavour, a ClusterQueue with
a cpu quota in flavours, a namespace's LocalQueue.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from collections.abc import Sequence
from typing import Any

from jobcore._runtime.client import Client
from jobcore.testing._kueue.api import ADMISSION_CHECKS
from jobcore.testing._kueue.api import CLUSTER_QUEUES
from jobcore.testing._kueue.api import LOCAL_QUEUES
from jobcore.testing._kueue.api import RESOURCE_FLAVORS
from jobcore.testing._kueue.crds import install_kueue_crds
from jobcore.testing._kueue.standin import KueueStandIn
from jobcore.testing._shared.background import background


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
    client: Client,
    name: str,
    quotas: dict[str, str],
    *,
    preemption: str = "Never",
    admission_checks: Sequence[str] = (),
) -> None:
    """A ClusterQueue with one resource group covering cpu: `quotas` is flavour: cpu,
    `preemption` its withinClusterQueue policy, and `admission_checks` the AdmissionChecks
    (which must exist) its Workloads need, for every flavour."""
    flavors = [
        {"name": f, "resources": [{"name": "cpu", "nominalQuota": q}]} for f, q in quotas.items()
    ]
    spec = {
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
        "preemption": {"withinClusterQueue": preemption},
    }
    if admission_checks:
        rules = [{"name": check} for check in admission_checks]
        spec["admissionChecksStrategy"] = {"admissionChecks": rules}
    body = {"apiVersion": CLUSTER_QUEUES.api_version, "kind": "ClusterQueue"}
    await client.create(CLUSTER_QUEUES, {**body, "metadata": {"name": name}, "spec": spec})


async def create_admission_check(client: Client, name: str, controller: str) -> None:
    """An AdmissionCheck run by `controller` (the test plays it, writing the Workloads'
    `status.admissionChecks`)."""
    body = {"apiVersion": ADMISSION_CHECKS.api_version, "kind": "AdmissionCheck"}
    spec = {"controllerName": controller}
    await client.create(ADMISSION_CHECKS, {**body, "metadata": {"name": name}, "spec": spec})


async def create_local_queue(client: Client, namespace: str, name: str, cluster_queue: str) -> None:
    """The namespace's LocalQueue `name`, in `cluster_queue`."""
    body = {"apiVersion": LOCAL_QUEUES.api_version, "kind": "LocalQueue"}
    meta = {"name": name, "namespace": namespace}
    await client.create(
        LOCAL_QUEUES, {**body, "metadata": meta, "spec": {"clusterQueue": cluster_queue}}
    )
