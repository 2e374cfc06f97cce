"""Debug and pause modes of a T9k MPIJob through the in-cluster controller, in real containers
(docs/lifecycle.md, Run modes; docs/mpijob.md, spec.runMode)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from controllers.sandbox.realjobs import MPIJOBS
from jobcore import PODS
from jobcore import Client
from jobcore import Object
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import wait_for_events
from jobcore.testing import wait_for_phase
from tests.cluster import mpiruns
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import create_in_cluster
from tests.cluster.conftest import job_pods
from tests.support.mpioutput import on_two_workers
from tests.support.mpioutput import ranks

pytestmark = pytest.mark.integration


async def test_debug_mode_keeps_the_pods_up_to_run_mpirun_by_hand(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    """The launcher sleeps with its hostfile, keys and MPI settings; the workers run sshd."""
    job = mpiruns.mpi_job("openmpi", tmp_path, name="debug", namespace=cluster_namespace)
    job["spec"]["runMode"] = {"debug": {"enabled": True}}
    await create_in_cluster(cluster_client, MPIJOBS, job, tmp_path)
    status = await wait_for_phase(
        cluster_client, MPIJOBS, cluster_namespace, "debug", "Running", timeout=60
    )
    assert condition(status, "Running")["reason"] == "Debugging", status
    pods = job_pods(cluster, cluster_namespace, "debug")
    assert sorted(pods) == ["debug-launcher", "debug-worker-0", "debug-worker-1"]
    assert all(p["metadata"]["labels"]["jobcore.dev/run-mode"] == "debug" for p in pods.values())
    assert cluster.logs(cluster_namespace, "debug-launcher", "mpi-launcher") == ""  # no mpirun

    home = job["spec"]["mpiHome"]
    by_hand = (
        f"{home}/bin/mpirun --hostfile /etc/mpi/hostfile --prefix {home} -N 2 "
        "/opt/jobcore/programs/allreduce"
    )
    exec_in = ("exec", "-n", cluster_namespace, "debug-launcher", "-c", "mpi-launcher", "--")

    # In debug mode nothing waits for the workers' DNS records, which cluster DNS publishes a
    # moment after the pods start: a user typing mpirun waits as long, the test until they resolve.
    def workers_resolve() -> bool:
        every = 'while read -r host _; do getent hosts "$host" >/dev/null || exit 1; done'
        lookup = f"{every} </etc/mpi/hostfile && echo resolved"
        return "resolved" in cluster.kubectl(*exec_in, "sh", "-c", lookup, check=False)

    await eventually(lambda: asyncio.to_thread(workers_resolve), timeout=30, interval=0.5)
    output = cluster.kubectl(*exec_in, "sh", "-c", by_hand)
    assert ranks(output) == on_two_workers("debug"), output
    status = await wait_for_phase(cluster_client, MPIJOBS, cluster_namespace, "debug", "Running")
    assert condition(status, "Running")["reason"] == "Debugging", status


async def all_stopped(client: Client, namespace: str, job: str) -> float:
    """When (time.monotonic) every pod of `job` had stopped, as the kubelet reports it: its
    phase final, or each of its containers terminated (a deleted pod), or the pod gone."""

    def stopped(pod: Object) -> bool:
        status = pod.get("status") or {}
        states = [s.get("state") or {} for s in status.get("containerStatuses") or ()]
        ended = status.get("phase") in ("Succeeded", "Failed")
        return ended or (bool(states) and all("terminated" in state for state in states))

    async def every_pod_stopped() -> bool:
        selector = f"{JOB_NAME_LABEL}={job}"
        return all(
            map(stopped, (await client.list(PODS, namespace, label_selector=selector))["items"])
        )

    await eventually(every_pod_stopped, timeout=60, interval=0.1)
    return time.monotonic()


async def test_pausing_deletes_the_pods_and_resuming_runs_the_job_again(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    job = mpiruns.mpi_job("mpich", tmp_path, name="pause", namespace=cluster_namespace, hold=True)
    before = await mpiruns.start_held(cluster, cluster_client, job, tmp_path)
    assert len(before) == 3

    def pause(enabled: bool) -> None:
        patch = json.dumps({"spec": {"runMode": {"pause": {"enabled": enabled}}}})
        cluster.kubectl(
            "patch", "mpijob", "-n", cluster_namespace, "pause", "--type=merge", "-p", patch
        )

    requested = time.monotonic()
    pause(True)
    stopping = asyncio.create_task(all_stopped(cluster_client, cluster_namespace, "pause"))
    try:
        status = await wait_for_phase(
            cluster_client, MPIJOBS, cluster_namespace, "pause", "Paused", timeout=60
        )
        paused = time.monotonic()
        stopped = await stopping
    finally:
        stopping.cancel()
    # The pods' containers stop within their grace period; what follows is the controller's.
    # Left to the kubelet, the stopped pods went 10 s later (docs/operations.md).
    print(f"pause: Paused {paused - requested:.1f} s after the request, "
          f"{paused - stopped:.1f} s after the pods stopped")  # fmt: skip
    assert paused - stopped < 5, f"Paused {paused - stopped:.1f} s after the pods stopped"
    assert (condition(status, "Paused")["status"], condition(status, "Paused")["reason"]) == (
        "True",
        "Paused",
    )
    assert job_pods(cluster, cluster_namespace, "pause") == {}

    pause(False)
    await mpiruns.wait_until_holding(cluster, cluster_namespace, "pause")
    after = mpiruns.identities(cluster, cluster_namespace, "pause")
    assert sorted(after) == sorted(before)
    assert not {uid for uid, _ in after.values()} & {uid for uid, _ in before.values()}
    status, log = await mpiruns.release_to_end(cluster, cluster_client, cluster_namespace, "pause")
    assert status["phase"] == "Succeeded", log
    assert ranks(log) == on_two_workers("pause"), log
    assert condition(status, "Paused")["reason"] == "Resumed", status
    await wait_for_events(cluster_client, cluster_namespace, "pause", "Paused", "Resuming")
