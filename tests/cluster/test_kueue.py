"""Kueue on the real cluster: the deployed controller (`--kueue auto`, Kueue's CRDs served when
it started) holds an MPIJob labelled for a LocalQueue until the kit's Kueue stand-in admits its
Workload, then the job runs its ranks on both workers in real containers, and its Workload is
Finished when it ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.sandbox.realjobs import MPIJOBS
from jobcore import Client
from jobcore.testing import KUEUE_WORKLOADS
from jobcore.testing import condition
from jobcore.testing import create_cluster_queue
from jobcore.testing import create_flavor
from jobcore.testing import create_local_queue
from jobcore.testing import eventually
from jobcore.testing import job_status
from jobcore.testing import kueue_running
from jobcore.testing import wait_for_phase
from tests.cluster import mpiruns
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import create_in_cluster
from tests.cluster.conftest import job_pods
from tests.support.mpioutput import on_two_workers
from tests.support.mpioutput import ranks

pytestmark = pytest.mark.integration

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


async def test_a_queued_mpijob_waits_for_kueues_admission_then_runs_in_containers(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    namespace, name = cluster_namespace, "queued"
    job = mpiruns.mpi_job("openmpi", tmp_path, name=name, namespace=namespace)
    job["metadata"].setdefault("labels", {})[QUEUE_LABEL] = "team"
    cluster_queue, flavor = f"team-{namespace}", f"default-{namespace}"
    async with kueue_running(cluster_client):
        await create_local_queue(cluster_client, namespace, "team", cluster_queue)
        await create_in_cluster(cluster_client, MPIJOBS, job, tmp_path)

        async def queued() -> bool:
            status = await job_status(cluster_client, MPIJOBS, namespace, name)
            return status.get("phase") == "Paused" and "Queued" in str(status.get("conditions"))

        await eventually(queued, timeout=60, interval=0.5)
        (workload,) = (await cluster_client.list(KUEUE_WORKLOADS, namespace))["items"]
        assert "admission" not in (workload.get("status") or {}), workload
        assert job_pods(cluster, namespace, name) == {}, "no pod before Kueue admits the job"

        # The ClusterQueue its LocalQueue names appears: Kueue admits the Workload.
        await create_flavor(cluster_client, flavor)
        await create_cluster_queue(cluster_client, cluster_queue, {flavor: "8"})
        await wait_for_phase(cluster_client, MPIJOBS, namespace, name, "Succeeded", timeout=180)
        log = cluster.logs(namespace, f"{name}-launcher", "mpi-launcher")
        assert ranks(log) == on_two_workers(name), log

        async def finished() -> bool:
            (workload,) = (await cluster_client.list(KUEUE_WORKLOADS, namespace))["items"]
            return bool(condition(workload["status"], "Finished")["status"] == "True")

        await eventually(finished, timeout=30, interval=0.5)
