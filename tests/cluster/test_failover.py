"""The controller's leader pod deleted while a job runs: the standby takes the Lease and carries
the job on to its end, with no pod of the job lost or created twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.manifests import NAME
from controllers.manifests import NAMESPACE
from jobcore import Client
from jobcore.testing import events_of
from jobcore.testing import eventually
from jobcore.testing import wait_for_events
from tests.cluster import mpiruns
from tests.cluster.conftest import Cluster
from tests.support.mpioutput import on_two_workers
from tests.support.mpioutput import ranks

pytestmark = pytest.mark.integration


async def test_the_standby_carries_a_running_job_on_when_the_leader_pod_is_deleted(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    job = mpiruns.mpi_job("openmpi", tmp_path, name="lead", namespace=cluster_namespace, hold=True)
    before = await mpiruns.start_held(cluster, cluster_client, job, tmp_path)
    leader = cluster.leader()
    (standby,) = {p["metadata"]["name"] for p in cluster.controller_pods()} - {leader}

    # kubectl waits until the pod is gone: within its 45 s grace period and the loaded
    # kubelet's own time to stop it (once over 60 s at the end of a CI-style run).
    cluster.kubectl("delete", "pod", "-n", NAMESPACE, leader, timeout=90)
    await eventually(lambda: cluster.leader() == standby, timeout=30, interval=0.5)
    status, log = await mpiruns.release_to_end(cluster, cluster_client, cluster_namespace, "lead")
    assert status["phase"] == "Succeeded", log
    assert ranks(log) == on_two_workers("lead"), log
    assert "restarts" not in status, status

    assert mpiruns.identities(cluster, cluster_namespace, "lead") == before
    await wait_for_events(cluster_client, cluster_namespace, "lead", "Succeeded")
    reasons = [reason for reason, _ in await events_of(cluster_client, cluster_namespace, "lead")]
    assert reasons == ["Initialized", "Running", "Succeeded"], reasons
    # The scheduler placed each pod once: none was created a second time, even briefly.
    scheduled = cluster.json(
        "events", "-n", cluster_namespace, "--field-selector", "reason=Scheduled"
    )
    assert sorted(e["involvedObject"]["name"] for e in scheduled["items"]) == sorted(before)

    # The Deployment replaces the deleted pod: two replicas again for the tests that follow.
    rollout = ("rollout", "status", "-n", NAMESPACE, f"deployment/{NAME}", "--timeout=120s")
    cluster.kubectl(*rollout, timeout=130)
    assert len(cluster.controller_pods()) == 2
