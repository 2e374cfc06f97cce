"""HorovodJobs through the in-cluster controller: horovodrun over ssh between real containers of
the horovod image (`scripts/images.sh`), static and elastic."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controllers.sandbox import clusterjobs
from controllers.sandbox import images
from controllers.sandbox import realjobs
from jobcore import CONFIGMAPS
from jobcore import Client
from jobcore.testing import condition
from jobcore.testing import require
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import run_in_cluster
from tests.support import mpioutput
from tests.support.realruns import elastic_horovod_job
from tests.support.realruns import scale_up_down_and_replace

pytestmark = pytest.mark.integration

STOP = "/tmp/jobcore-stop"
"""The elastic program's stop file, in a worker container's own /tmp."""


async def test_a_static_job_allreduces_on_two_workers_by_two_slots(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    require(images.missing("horovod"))
    cmd = realjobs.horovod_allreduce(tmp_path)
    job = realjobs.horovod_job(
        cmd, name="ar", namespace=cluster_namespace, installs=clusterjobs.installs()
    )
    status, log = await run_in_cluster(cluster, cluster_client, realjobs.HOROVODJOBS, job, tmp_path)
    assert status["phase"] == "Succeeded", log
    assert condition(status, "Completed")["reason"] == "Succeeded", log
    assert "starting: horovodrun -np 4 --hostfile /etc/horovod/hostfile --gloo python3" in log, log
    assert mpioutput.ranks(log, prefix=".*") == mpioutput.on_two_workers("ar"), log


async def test_an_elastic_job_scales_up_and_down_and_replaces_a_deleted_worker_while_training(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    require(images.missing("horovod"))
    cmd = realjobs.horovod_elastic(tmp_path, STOP, 120)
    job = realjobs.horovod_job(
        cmd, name="el", namespace=cluster_namespace, installs=clusterjobs.installs()
    )
    job, configmap = clusterjobs.with_programs_configmap(elastic_horovod_job(job), tmp_path)
    await cluster_client.create(CONFIGMAPS, configmap)

    async def stop_training() -> None:
        # worker-0 stays through every change; its ranks' stop decision is reduced to all.
        touch = ("exec", "-n", cluster_namespace, "el-worker-0", "-c", "worker", "--")
        await asyncio.to_thread(cluster.kubectl, *touch, "touch", STOP)

    await scale_up_down_and_replace(cluster_client, cluster, job, stop_training)
