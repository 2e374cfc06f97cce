"""T9k MPIJobs through the in-cluster controller, in real containers: Open MPI 4, MPICH and
Intel MPI in both T9k shapes, a rank's exit code and a killed worker as the kubelet reports
them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controllers.realjobs import MPIJOBS
from jobcore import Client
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import job_status
from tests.cluster import mpiruns
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import container_status
from tests.cluster.conftest import kill_container
from tests.cluster.conftest import run_in_cluster
from tests.mpioutput import assert_pingpong_on_two_workers
from tests.mpioutput import on_two_workers
from tests.mpioutput import ranks

pytestmark = pytest.mark.integration

LAUNCHER = "mpi-launcher"


@pytest.mark.parametrize(
    ("mpi", "current_shape"),
    [("openmpi", False), ("mpich", True), ("intel", True)],
    ids=["openmpi4-seed-shape", "mpich-current-shape", "intel-current-shape"],
)
async def test_each_mpi_runs_its_ranks_on_both_workers(
    cluster: Cluster,
    cluster_client: Client,
    cluster_namespace: str,
    tmp_path: Path,
    *,
    mpi: str,
    current_shape: bool,
) -> None:
    job = mpiruns.mpi_job(
        mpi, tmp_path, name="mpi", namespace=cluster_namespace, current_shape=current_shape
    )
    status, log = await run_in_cluster(
        cluster, cluster_client, MPIJOBS, job, tmp_path, container=LAUNCHER
    )
    assert status["phase"] == "Succeeded", log
    if mpi == "intel":
        assert_pingpong_on_two_workers(log, "mpi")
    else:
        assert ranks(log) == on_two_workers("mpi"), log
    launcher = container_status(cluster, cluster_namespace, "mpi-launcher", LAUNCHER)
    assert launcher["state"]["terminated"]["exitCode"] == 0, launcher
    assert launcher["state"]["terminated"]["reason"] == "Completed", launcher


async def test_a_rank_exiting_3_fails_the_job_with_the_code_and_reason_of_the_kubelet(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    job = mpiruns.mpi_job(
        "openmpi", tmp_path, name="rank3", namespace=cluster_namespace, failing_rank=2
    )
    status, log = await run_in_cluster(
        cluster, cluster_client, MPIJOBS, job, tmp_path, container=LAUNCHER
    )
    assert status["phase"] == "Failed", log
    terminated = container_status(cluster, cluster_namespace, "rank3-launcher", LAUNCHER)
    terminated = terminated["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error"), terminated
    # The launcher's terminationMessagePolicy FallbackToLogsOnError: the kubelet kept the log's
    # tail, mpirun's report, whose last line the job's message quotes.
    assert log.rstrip().endswith(terminated["message"].rstrip()), terminated
    assert terminated["message"].rstrip().endswith("Exit code:    3\n" + "-" * 74), terminated
    # What `kubectl get mpijob` and `kubectl describe mpijob` show.
    shown = cluster.json("mpijob", "-n", cluster_namespace, "rank3")["status"]
    assert condition(shown, "Failed")["message"] == "The job exited with an error code."
    failure = condition(shown, "ReplicaFailure")["message"]
    assert failure == (
        "Pod[rank3-launcher] exited with error code 3 (container mpi-launcher): Exit code:    3"
    )
    (launcher,) = next(t["status"] for t in shown["tasks"] if t["type"] == "launcher")
    assert launcher["containers"] == [
        {"name": LAUNCHER, "state": "terminated", "exitCode": 3, "reason": "Error"}
    ]
    events = cluster.kubectl("describe", "mpijob", "-n", cluster_namespace, "rank3")
    assert f"The job exited with an error code.; {failure}" in events, events


async def test_a_killed_worker_restarts_the_job_which_then_succeeds(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    """runPolicy.backoffLimit 1: a worker killed mid-run (137) tears the job down and creates
    it again after the retry backoff (docs/lifecycle.md, Failures and restarts)."""
    job = mpiruns.mpi_job("openmpi", tmp_path, name="kill", namespace=cluster_namespace, hold=True)
    job["spec"]["runPolicy"] = {"backoffLimit": 1}
    killed = (await mpiruns.start_held(cluster, cluster_client, job, tmp_path))["kill-worker-1"]
    await kill_container(cluster, cluster_namespace, "kill-worker-1", "mpi-worker")

    async def restarting() -> bool:
        status = await job_status(cluster_client, MPIJOBS, cluster_namespace, "kill")
        return bool(condition(status, "Running")["reason"] == "Restarting")

    await eventually(restarting, timeout=30, interval=0.2)
    status = await job_status(cluster_client, MPIJOBS, cluster_namespace, "kill")
    message = condition(status, "Running")["message"]
    # The first failure the kubelet reports: the killed worker (137), or mpirun, which lost it
    # over ssh (255) and may be reported first. After the code, the last line of the log (the
    # FallbackToLogsOnError message).
    assert re.fullmatch(
        r"Restart 1 of 1 in 10 s, at \S+Z: recreating every pod after a failure: "
        r"Pod\[(kill-worker-1\] exited with error code 137 \(container mpi-worker"
        r"|kill-launcher\] exited with error code 255 \(container mpi-launcher)\)(: .+)?",
        message,
    ), message

    def replaced() -> bool:
        return mpiruns.identities(cluster, cluster_namespace, "kill").get("kill-worker-1") not in (
            None,
            killed,
        )

    await eventually(replaced, timeout=60, interval=0.5)
    await mpiruns.wait_until_holding(cluster, cluster_namespace, "kill")
    status, log = await mpiruns.release_to_end(cluster, cluster_client, cluster_namespace, "kill")
    assert status["phase"] == "Succeeded", log
    assert ranks(log) == on_two_workers("kill"), log
    assert status["restarts"] == 1, status
