"""A ColossalAIJob through the in-cluster controller: `colossalai run` starts torchrun over ssh
in real containers of the colossalai image (`scripts/images.sh`), whose ranks all-reduce over
gloo."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.sandbox import clusterjobs
from controllers.sandbox import images
from controllers.sandbox import realjobs
from jobcore import Client
from jobcore.testing import require
from jobcore.testing import wait_for_events
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import run_in_cluster
from tests.support import mpioutput

pytestmark = pytest.mark.integration


async def test_two_workers_by_two_processes_all_reduce_over_gloo(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    require(images.missing("colossalai"))
    job = realjobs.colossalai_job(
        tmp_path, name="cai", namespace=cluster_namespace, installs=clusterjobs.installs()
    )
    status, log = await run_in_cluster(
        cluster, cluster_client, realjobs.COLOSSALAIJOBS, job, tmp_path, timeout=180
    )
    assert status["phase"] == "Succeeded", log
    assert mpioutput.ranks(log, prefix=".*") == mpioutput.on_two_workers("cai"), log
    await wait_for_events(cluster_client, cluster_namespace, "cai", "Succeeded")
