"""`jobcore run --cluster-domain`: on a cluster whose DNS domain is not `cluster.local`, every
worker name the controller writes (hostfiles, Horovod's discovery script) is in that domain,
and no pod is given a search domain to find a peer by a shorter name. The controllers against a
real API server; no pod needs to run.
"""

from __future__ import annotations

import pytest

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import Client
from jobcore.testing import eventually
from jobcore.testing import job_controller
from tests.support.kindjobs import MPIJOB
from tests.support.kubeflowjobs import KIND as KUBEFLOW
from tests.support.kubeflowjobs import MPIJOBS as KUBEFLOW_MPIJOBS
from tests.support.kubeflowjobs import mpijob as kubeflow_mpijob

pytestmark = pytest.mark.integration

DOMAIN = "corp.lan"


async def test_worker_names_are_in_the_cluster_domain(client: Client, namespace: str) -> None:
    async with (
        job_controller(client, KUBEFLOW, namespace=namespace, cluster_domain=DOMAIN),
        job_controller(client, MPIJOB.kind, namespace=namespace, cluster_domain=DOMAIN),
    ):
        await client.create(
            KUBEFLOW_MPIJOBS, kubeflow_mpijob(namespace, "kf", mpiImplementation="MPICH")
        )
        await client.create(MPIJOB.resource, MPIJOB.job(namespace, "t9", mpiImplementation="MPICH"))
        names = ("kf-config", "t9-hostfile", "kf-worker-1", "t9-worker-1")

        async def created() -> bool:
            found = {
                o["metadata"]["name"] for o in (await client.list(CONFIGMAPS, namespace))["items"]
            }
            found |= {o["metadata"]["name"] for o in (await client.list(PODS, namespace))["items"]}
            return set(names) <= found

        await eventually(created, timeout=20)
    for job, config in (("kf", "kf-config"), ("t9", "t9-hostfile")):
        lines = (await client.get(CONFIGMAPS, config, namespace))["data"]["hostfile"].splitlines()
        # MPICH's format: host:slots.
        hosts = [line.split(":")[0] for line in lines]
        print(f"{config} under --cluster-domain {DOMAIN}: {lines[0]}")
        assert hosts == [f"{job}-worker-{i}.{job}.{namespace}.svc.{DOMAIN}" for i in (0, 1)]
    for job in ("kf", "t9"):
        worker = await client.get(PODS, f"{job}-worker-1", namespace)
        assert "dnsConfig" not in worker["spec"], worker["spec"]
