"""T9k MPIJobs for the real cluster: `realjobs`' sample in either T9k shape, a program that
holds its ranks until the test lets them go, what the ranks printed, and a worker killed
mid-run."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from controllers.sandbox import clusterjobs
from controllers.sandbox import images
from controllers.sandbox import realjobs
from controllers.sandbox.realjobs import MPIJOBS
from jobcore import Client
from jobcore import Object
from jobcore.launcher import Transport
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import job_status
from jobcore.testing import require
from jobcore.testing import wait_for_end
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import create_in_cluster
from tests.cluster.conftest import job_pods
from tests.cluster.conftest import kill_container
from tests.support.mpioutput import on_two_workers
from tests.support.mpioutput import ranks

GO = "/tmp/jobcore-go"
"""The file a held rank waits for, in its worker's container (see `release_to_end`)."""
HOLD = f"""\
#!/bin/sh
# Say the rank started, wait for the test to create {GO} in this container, then run "$@".
echo "holding on $(hostname)"
while [ ! -e {GO} ]; do sleep 0.1; done
exec "$@"
"""


def mpi_job(
    mpi: str,
    folder: Path,
    *,
    name: str,
    namespace: str,
    current_shape: bool = False,
    hold: bool = False,
    failing_rank: int | None = None,
    transport: Transport = "ssh",
) -> Object:
    """`realjobs`' MPIJob of 2 workers x 2 slots in the MPI's image (for the agent `transport`,
    its sshd-free one), T9k's current shape if asked; with `hold`, each rank waits for
    `release_to_end` before it runs the program."""
    framework = realjobs.MPIS[mpi].framework
    agent = transport == "agent"
    require(images.missing(clusterjobs.AGENT_IMAGES[framework] if agent else framework))
    installs = clusterjobs.installs(transport)
    command = realjobs.mpi_program(mpi, folder, failing_rank=failing_rank, installs=installs)
    if hold:
        script = folder / "hold.sh"
        script.write_text(HOLD)
        command = [str(script), *command]
    job = realjobs.mpi_job(mpi, folder, command, name=name, namespace=namespace, installs=installs)
    job = realjobs.through_agent(job) if agent else job
    return in_current_shape(job) if current_shape else job


def in_current_shape(job: Object) -> Object:
    """A seed-shape MPIJob written as T9k's current tutorials write it: `replicaSpecs` (the
    container named `worker`) and `mpiConfig`."""
    job = copy.deepcopy(job)
    spec: dict[str, Any] = job["spec"]
    worker = spec.pop("worker")
    for container in worker["template"]["spec"]["containers"]:
        if container["name"] == "mpi-worker":
            container["name"] = "worker"
    config = {"extraArgs": worker["extraMPIArgs"], "script": worker["cmd"]}
    config["mpiImplementation"] = spec.pop("mpiImplementation")
    if "mpiHome" in spec:
        config["home"] = spec.pop("mpiHome")
    if "mca" in spec:
        config["mca"] = spec.pop("mca")
    spec["replicaSpecs"] = [
        {"type": "launcher", "replicas": 1, "template": {}},
        {"type": "worker", "replicas": worker["replicas"], "template": worker["template"]},
    ]
    spec["mpiConfig"] = config
    return job


async def start_held(
    cluster: Cluster, client: Client, job: Object, folder: Path
) -> dict[str, tuple[str, str]]:
    """Create `job` (made with `hold`) and wait until its ranks hold on both workers; return its
    pods' `identities` then."""
    namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
    await create_in_cluster(client, MPIJOBS, job, folder)
    await wait_until_holding(cluster, namespace, name)
    return identities(cluster, namespace, name)


async def wait_until_holding(cluster: Cluster, namespace: str, job: str) -> None:
    """Wait until the ranks of `job`'s launcher hold on both workers (the job runs)."""

    def both() -> bool:
        log = cluster.logs(namespace, f"{job}-launcher", "mpi-launcher")
        return holding(log) == {f"{job}-worker-0", f"{job}-worker-1"}

    await eventually(both, timeout=60, interval=0.5)


def holding(log: str) -> set[str]:
    """The hosts of the ranks that said they hold."""
    return set(re.findall(r"^holding on (\S+)$", log, re.M))


async def release_to_end(
    cluster: Cluster, client: Client, namespace: str, job: str
) -> tuple[dict[str, Any], str]:
    """Let the held ranks run and the job end: its status and its launcher's output."""
    for index in range(2):
        pod = f"{job}-worker-{index}"
        cluster.kubectl("exec", "-n", namespace, pod, "-c", "mpi-worker", "--", "touch", GO)
    status: dict[str, Any] = await wait_for_end(client, MPIJOBS, namespace, job)
    return status, cluster.logs(namespace, f"{job}-launcher", "mpi-launcher")


def identities(cluster: Cluster, namespace: str, job: str) -> dict[str, tuple[str, str]]:
    """Each of the job's pods by name: its uid and creationTimestamp."""
    pods = job_pods(cluster, namespace, job)
    return {n: (p["metadata"]["uid"], p["metadata"]["creationTimestamp"]) for n, p in pods.items()}


async def killed_then_rerun(
    cluster: Cluster, client: Client, job: Object, folder: Path, *, launcher_exit: str
) -> None:
    """Hold `job` (made with `hold`) on both workers, SIGKILL worker 1's container mid-run: with
    runPolicy.backoffLimit 1 the job is torn down and created again after the retry backoff
    (docs/lifecycle.md, Failures and restarts), and its second run succeeds on both workers.
    The restart names the first failure the kubelet reports: the killed worker (137), or the
    launcher, which lost it, exiting with a code `launcher_exit` matches."""
    namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
    job["spec"]["runPolicy"] = {"backoffLimit": 1}
    worker = f"{name}-worker-1"
    killed = (await start_held(cluster, client, job, folder))[worker]
    await kill_container(cluster, namespace, worker, "mpi-worker")

    async def restarting() -> bool:
        status = await job_status(client, MPIJOBS, namespace, name)
        return bool(condition(status, "Running")["reason"] == "Restarting")

    await eventually(restarting, timeout=30, interval=0.2)
    status = await job_status(client, MPIJOBS, namespace, name)
    message = condition(status, "Running")["message"]
    # After the code, the last line of the log (the FallbackToLogsOnError message).
    assert re.fullmatch(
        r"Restart 1 of 1 in 10 s, at \S+Z: recreating every pod after a failure: "
        rf"Pod\[({worker}\] exited with error code 137 \(container mpi-worker"
        rf"|{name}-launcher\] exited with error code {launcher_exit} \(container mpi-launcher)\)"
        r"(: .+)?",
        message,
    ), message

    def replaced() -> bool:
        return identities(cluster, namespace, name).get(worker) not in (None, killed)

    await eventually(replaced, timeout=60, interval=0.5)
    await wait_until_holding(cluster, namespace, name)
    status, log = await release_to_end(cluster, client, namespace, name)
    assert status["phase"] == "Succeeded", log
    assert ranks(log) == on_two_workers(name), log
    assert status["restarts"] == 1, status
