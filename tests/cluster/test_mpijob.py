"""T9k MPIJobs through the in-cluster controller, in real containers: Open MPI 4, MPICH and
Intel MPI in both T9k shapes, a rank's exit code and a killed worker as the kubelet reports
them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controllers.sandbox.realjobs import MPIJOBS
from jobcore import Client
from jobcore.launcher import Transport
from jobcore.testing import condition
from tests.cluster import mpiruns
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import container_status
from tests.cluster.conftest import run_in_cluster
from tests.support.mpioutput import assert_pingpong_on_two_workers
from tests.support.mpioutput import on_two_workers
from tests.support.mpioutput import ranks

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
    """A worker killed mid-run (137) restarts the job (runPolicy.backoffLimit 1), over ssh and
    through the agent, side by side; mpirun, which loses it over ssh, exits 255."""
    runs = []
    transports: tuple[tuple[Transport, str], ...] = (("ssh", "255"), ("agent", r"\d+"))
    for transport, exit_code in transports:
        folder = tmp_path / transport
        folder.mkdir()
        job = mpiruns.mpi_job(
            "openmpi",
            folder,
            name=f"kill-{transport}",
            namespace=cluster_namespace,
            hold=True,
            transport=transport,
        )
        runs.append(
            mpiruns.killed_then_rerun(cluster, cluster_client, job, folder, launcher_exit=exit_code)
        )
    await asyncio.gather(*runs)
