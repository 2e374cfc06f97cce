"""`jobcore sandbox --cluster`: the sample job in the real cluster, as the README shows it."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from controllers.sandbox.cluster import run_cluster_sandbox
from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.integration


async def test_the_mpijob_sample_runs_in_containers_and_its_status_is_shown(
    cluster: Cluster, cluster_namespace: str
) -> None:
    out = io.StringIO()
    phase = await run_cluster_sandbox(cluster=cluster.real, namespace=cluster_namespace, out=out)
    shown = out.getvalue()
    assert phase == "Succeeded", shown
    assert "controller deployed with kubectl apply -k: Ready in" in shown, shown
    assert f"KUBECONFIG={cluster.kubeconfig}" in shown, shown
    assert "dashboard: http://127.0.0.1:" in shown, shown
    assert "mpi-example: phase=Succeeded" in shown, shown
    launcher = shown.partition("launcher output:\n")[2]
    assert launcher.count(": sum=10") == 4, shown


async def test_the_mpijob_sample_runs_through_the_agent_from_an_image_without_sshd(
    cluster: Cluster, cluster_namespace: str
) -> None:
    """`jobcore sandbox --cluster --launch agent`."""
    out = io.StringIO()
    phase = await run_cluster_sandbox(
        cluster=cluster.real, namespace=cluster_namespace, launch="agent", out=out
    )
    shown = out.getvalue()
    assert phase == "Succeeded", shown
    launcher = shown.partition("launcher output:\n")[2]
    assert launcher.startswith("jobcore-agent launch: waiting up to 300s for 2 worker(s)'"), shown
    assert launcher.count(": sum=10") == 4, shown


def test_taking_the_cluster_down_is_refused_while_another_process_uses_it(
    cluster: Cluster,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "controllers", "sandbox", "--cluster", "--down"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done
    assert f"the real cluster is in use by pid {os.getpid()}" in done.stderr, done.stderr
