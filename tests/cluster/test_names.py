"""Two jobs in one namespace on the real cluster's DNS, `train` and `train-launcher`: the second's
headless Service is named as the first's launcher. Hydra's proxies (MPICH, Intel MPI) of
`train` must reach `train`'s own launcher, and the other job's pods must see nothing of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.sandbox import clusterjobs
from controllers.sandbox import realjobs
from controllers.sandbox.realjobs import MPIJOBS
from jobcore import Client
from tests.cluster import mpiruns
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import run_in_cluster
from tests.support.kubeflowjobs import MPIJOBS as KUBEFLOW_MPIJOBS
from tests.support.kubeflowjobs import mpijob
from tests.support.mpioutput import assert_pingpong_on_two_workers
from tests.support.mpioutput import on_two_workers
from tests.support.mpioutput import ranks

pytestmark = pytest.mark.integration

LAUNCHER = "mpi-launcher"


@pytest.mark.parametrize("mpi", ["mpich", "intel"])
async def test_a_job_named_like_anothers_launcher_takes_none_of_its_peers(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path, mpi: str
) -> None:
    """`train-launcher` runs first, its ranks held; then `train` runs to its end. Resolved
    through the namespace's search list, `train`'s bare launcher name was the other job's
    Service: `train`'s proxies called the other job's pods and `train` failed or hung."""
    ns = cluster_namespace
    folders = {name: tmp_path / name for name in ("train-launcher", "train")}
    for folder in folders.values():
        folder.mkdir()
    other = mpiruns.mpi_job(
        mpi, folders["train-launcher"], name="train-launcher", namespace=ns, hold=True
    )
    await mpiruns.start_held(cluster, cluster_client, other, folders["train-launcher"])
    service = cluster.json("service", "-n", ns, "train-launcher")
    assert service["spec"]["clusterIP"] == "None", service  # the name `train` used to resolve

    train = mpiruns.mpi_job(mpi, folders["train"], name="train", namespace=ns)
    status, log = await run_in_cluster(
        cluster, cluster_client, MPIJOBS, train, folders["train"], container=LAUNCHER
    )
    assert status["phase"] == "Succeeded", log
    if mpi == "intel":
        assert_pingpong_on_two_workers(log, "train")
    else:
        assert ranks(log) == on_two_workers("train"), log

    # The other job's ranks held on undisturbed, and (once is enough: it is the same check
    # whatever the MPI) run to their end once let go.
    held = cluster.logs(ns, "train-launcher-launcher", LAUNCHER)
    assert mpiruns.holding(held) == {"train-launcher-worker-0", "train-launcher-worker-1"}, held
    if mpi == "mpich":
        status, log = await mpiruns.release_to_end(cluster, cluster_client, ns, "train-launcher")
        assert status["phase"] == "Succeeded", log


async def test_a_kubeflow_job_named_like_anothers_launcher_takes_none_of_its_peers(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    """The same for Kubeflow's MPIJob `train` with MPICH, as root in the MPICH image: its
    launcher's bare hostname is `train-launcher` too, the other job's Service."""
    ns = cluster_namespace
    other = mpiruns.mpi_job("mpich", tmp_path, name="train-launcher", namespace=ns, hold=True)
    await mpiruns.start_held(cluster, cluster_client, other, tmp_path)

    installs = clusterjobs.installs()
    home = installs.home("mpich")
    container = {"name": "mpi", "image": installs.image("mpich")}
    command = ["mpirun", "-n", "2", *realjobs.mpi_program("mpich", tmp_path, installs=installs)]
    path = f"{home}/bin:/usr/local/bin:/usr/bin:/bin"
    launcher = {**container, "command": command, "env": [{"name": "PATH", "value": path}]}
    # Created once the workers are Ready, and not retried, its pod kept with its log: this test
    # is about the launcher's name, not about the race with the workers' records.
    replicas = {
        "Launcher": {
            "replicas": 1,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [launcher]}},
        },
        "Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}},
    }
    job = mpijob(
        ns,
        "train",
        run_policy={"backoffLimit": 0},
        launcherCreationPolicy="WaitForWorkersReady",
        mpiImplementation="MPICH",
        mpiReplicaSpecs=replicas,
    )
    await cluster_client.create(KUBEFLOW_MPIJOBS, job)
    wait = ("wait", "-n", ns, "--for=condition=Succeeded", "mpijobs.kubeflow.org/train")
    done = cluster.kubectl(*wait, "--timeout=150s", timeout=170, check=False)
    succeeded = "condition met" in done
    role = "training.kubeflow.org/job-role=launcher"
    log = cluster.kubectl("logs", "-n", ns, "-l", role, "--tail=-1", check=False)
    if not succeeded:
        shown = cluster.kubectl("get", "-n", ns, "-o", "yaml", "mpijobs.kubeflow.org/train")
        pytest.fail(f"train did not succeed:\n{shown}\n{log}")
    assert ranks(log) == on_two_workers("train", slots=1), log

    held = cluster.logs(ns, "train-launcher-launcher", LAUNCHER)
    assert mpiruns.holding(held) == {"train-launcher-worker-0", "train-launcher-worker-1"}, held
