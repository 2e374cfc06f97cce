"""Jobs launched through jobcore's agent in the real cluster: each MPI's T9k MPIJob from an
image without sshd, a HorovodJob and a ColossalAIJob, a rank exiting 3, and Kubeflow's pi in
an image without Python, as a non-root user under a read-only root the kubelet enforces, beside
a job whose worker's agent hangs. A worker killed mid-run through the agent is
tests/cluster/test_mpijob.py's.

The agent comes from the controller's own image (its init container's image is jobcore's);
`scripts/images.sh` builds the sshd-free images (`clusterjobs.AGENT_IMAGES`). Horovod and
ColossalAI run in their own images, which keep the sshd their ssh tests need: the test reads,
from the host, that nothing but the agent runs in their workers.
"""

from __future__ import annotations

import asyncio
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.sandbox import clusterjobs
from controllers.sandbox import images
from controllers.sandbox import realjobs
from controllers.sandbox.realjobs import COLOSSALAIJOBS
from controllers.sandbox.realjobs import HOROVODJOBS
from controllers.sandbox.realjobs import MPIJOBS
from jobcore import PODS
from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.launcher import AGENT
from jobcore.launcher import launched
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import require
from jobcore.testing import wait_for_end
from jobkinds.kubeflow.transport import TRANSPORT_ANNOTATION
from tests.cluster import mpiruns
from tests.cluster.conftest import ROOT
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import container_processes
from tests.cluster.conftest import container_status
from tests.cluster.conftest import create_in_cluster
from tests.support.mpioutput import assert_pingpong_on_two_workers
from tests.support.mpioutput import on_two_workers
from tests.support.mpioutput import ranks

pytestmark = pytest.mark.integration

LAUNCHER = "mpi-launcher"
JOBS = {"openmpi5": ("openmpi5", None), "mpich": ("mpich", None), "intel": ("intel", None)}
"""The MPIJobs run side by side, by name: their MPI, and the rank that exits 3 (if any). Open
MPI 4's success is the killed worker's job's second run (tests/cluster/test_mpijob.py), and
Kubeflow's pi."""
Run = tuple[Resource, Object, str]
"""A job to run: its kind's resource, the job, its launcher's container."""


def mpi_runs(folder: Path, namespace: str) -> dict[str, Run]:
    """JOBS and an Open MPI 4 job whose rank 2 exits 3, in their MPIs' images without sshd."""
    runs = {}
    for name, (mpi, failing_rank) in {**JOBS, "rank3": ("openmpi", 2)}.items():
        (folder / name).mkdir()
        job = mpiruns.mpi_job(
            mpi,
            folder / name,
            name=name,
            namespace=namespace,
            failing_rank=failing_rank,
            transport="agent",
        )
        runs[name] = (MPIJOBS, job, LAUNCHER)
    return runs


def framework_runs(folder: Path, namespace: str) -> dict[str, Run]:
    """A static HorovodJob (gloo) and a ColossalAIJob of 2 workers x 1 rank (torch is slow to
    start on 2 cores), through the agent in their own images (whose sshd stays unused)."""
    require(images.missing("horovod", "colossalai"))
    installs = clusterjobs.installs("agent")
    for name in ("hvd", "cai"):
        (folder / name).mkdir()
    cmd = realjobs.horovod_allreduce(folder / "hvd")
    horovod = realjobs.horovod_job(cmd, name="hvd", namespace=namespace, installs=installs)
    horovod["spec"]["worker"]["slotsPerWorker"] = 1
    colossalai = realjobs.colossalai_job(
        folder / "cai", name="cai", namespace=namespace, procs=1, installs=installs
    )
    return {
        "hvd": (HOROVODJOBS, realjobs.through_agent(horovod), "launcher"),
        "cai": (COLOSSALAIJOBS, realjobs.through_agent(colossalai), "launcher"),
    }


async def run_side_by_side(
    client: Client, namespace: str, folder: Path, runs: dict[str, Run]
) -> dict[str, Any]:
    """Create every job of `runs` (its programs in `folder`/NAME) and wait until all have
    ended: their statuses, by name."""
    for name, (resource, job, _) in runs.items():
        await create_in_cluster(client, resource, job, folder / name)
    ended = await asyncio.gather(
        *(
            wait_for_end(client, resource, namespace, name, timeout=240)
            for name, (resource, _, _) in runs.items()
        )
    )
    return dict(zip(runs, ended, strict=True))


async def test_each_mpi_horovod_and_colossalai_run_through_the_agent_and_a_rank_exiting_3_fails(
    cluster: Cluster, cluster_client: Client, cluster_namespace: str, tmp_path: Path
) -> None:
    """Open MPI 5, MPICH, Intel MPI, Horovod (gloo) and ColossalAI run their ranks on both
    workers, reached through the agent that jobcore's image delivered, the only process left
    in each worker; an Open MPI 4 rank exiting 3 fails its job with 3. The MPIJobs run side by
    side first, then Horovod's and ColossalAI's: all at once, 2 cores ran at load 25 and the
    agent's rsh (10 s to connect) or horovodrun's start (30 s) ran out of time."""
    waves = mpi_runs(tmp_path, cluster_namespace), framework_runs(tmp_path, cluster_namespace)
    statuses: dict[str, Any] = {}
    for wave in waves:
        statuses |= await run_side_by_side(cluster_client, cluster_namespace, tmp_path, wave)
    runs = waves[0] | waves[1]
    jobcore = images.reference("jobcore")
    for name, (_, _, container) in runs.items():
        log = cluster.logs(cluster_namespace, f"{name}-launcher", container)
        launcher = await cluster_client.get(PODS, f"{name}-launcher", cluster_namespace)
        (installed,) = launcher["status"]["initContainerStatuses"]
        assert (installed["name"], installed["image"]) == ("jobcore-agent", jobcore), installed
        assert launcher["spec"]["containers"][0]["command"][:2] == [AGENT, "launch"]
        if name == "rank3":
            continue
        assert statuses[name]["phase"] == "Succeeded", log
        if name == "intel":
            assert_pingpong_on_two_workers(log, name)
        else:  # horovodrun and torchrun put a prefix before each rank's line
            slots = 1 if name in ("hvd", "cai") else 2
            assert ranks(log, prefix=".*") == on_two_workers(name, slots), log
        workers = [f"{name}-worker-0", f"{name}-worker-1"]
        assert sorted(launched(launcher, container) or ()) == workers, launcher["status"]
        worker = "mpi-worker" if container == LAUNCHER else "worker"
        for pod in workers:  # no sshd, even in an image that has one
            processes = await container_processes(cluster, cluster_namespace, pod, worker)
            assert [p[:2] for p in processes] == [[AGENT, "serve"]], (pod, processes)

    assert statuses["rank3"]["phase"] == "Failed"
    ended_with = container_status(cluster, cluster_namespace, "rank3-launcher", LAUNCHER)
    terminated = ended_with["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error"), terminated
    failure = condition(statuses["rank3"], "ReplicaFailure")["message"]
    assert failure.startswith(
        "Pod[rank3-launcher] exited with error code 3 (container mpi-launcher)"
    ), failure


# Kubeflow's pi -------------------------------------------------------------------------------

SAMPLE = ROOT / "manifests" / "samples" / "kubeflow-mpijob-pi-nonroot.yaml"
MPIJOB = "mpijobs.kubeflow.org"
READ_ONLY = "touch /home/mpiuser/written 2>&1; exec /home/mpiuser/pi"
"""Each rank first tries to write to its user's home, which the read-only root refuses."""
GATE = "until [ -e /tmp/go ]; do sleep 0.2; done"
"""The hung job's launcher waits in an init container until the test creates /tmp/go."""
WAIT_SECONDS = 5
"""How long the hung job's launcher waits for its workers' agents (JOBCORE_WAIT_SECONDS)."""


def kubeflow_pi(name: str, folder: Path, *, hung: bool = False) -> Path:
    """Kubeflow's non-root pi example through the agent, in the image without sshd or Python:
    every container read-only (an emptyDir at /tmp for Open MPI's session files), 250m CPU
    each; the workers' sshd command dropped (the agent serves in its place). A `hung` job's
    launcher is created at once, waits behind GATE first, then gives up on its workers after
    WAIT_SECONDS, and is neither restarted nor retried."""
    job: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    job["metadata"] = {"name": name, "annotations": {TRANSPORT_ANNOTATION: "agent"}}
    image = images.reference("mpi-pi-nosshd")
    locked = {"runAsNonRoot": True, "readOnlyRootFilesystem": True}
    tmp = {"name": "tmp", "mountPath": "/tmp"}
    for replica in job["spec"]["mpiReplicaSpecs"].values():
        pod = replica["template"]["spec"]
        pod["volumes"] = [{"name": "tmp", "emptyDir": {}}]
        for container in pod["containers"]:
            container.update(image=image, securityContext=locked, volumeMounts=[tmp])
            container["resources"]["limits"]["cpu"] = "250m"
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    launcher["containers"][0]["args"] = ["-n", "2", "sh", "-c", READ_ONLY]
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    del worker["command"], worker["args"]
    if hung:
        job["spec"].pop("launcherCreationPolicy")
        job["spec"]["runPolicy"]["backoffLimit"] = 0
        job["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
        launcher["containers"][0]["env"] = [
            {"name": "JOBCORE_WAIT_SECONDS", "value": str(WAIT_SECONDS)}
        ]
        gate = {"name": "gate", "image": image, "command": ["sh", "-c", GATE]}
        launcher["initContainers"] = [{**gate, "securityContext": locked, "volumeMounts": [tmp]}]
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def kubeflow_pods(cluster: Cluster, namespace: str, job: str, role: str) -> list[dict[str, Any]]:
    selector = f"training.kubeflow.org/job-name={job},training.kubeflow.org/job-role={role}"
    return list(cluster.json("pods", "-n", namespace, "-l", selector)["items"])


async def test_kubeflows_pi_runs_without_sshd_or_python_read_only_and_a_hung_agent_fails(
    cluster: Cluster, cluster_namespace: str, tmp_path: Path
) -> None:
    """The pi example succeeds as uid 1000 with every root filesystem read-only. Beside it, a
    job whose worker hangs (SIGSTOP: its port still accepts, its agent never greets) fails:
    its launcher gives up after JOBCORE_WAIT_SECONDS with 124, naming that worker."""
    require(images.missing("mpi-pi-nosshd"))
    ns = ("-n", cluster_namespace)
    for job in (kubeflow_pi("pi", tmp_path), kubeflow_pi("hung", tmp_path, hung=True)):
        cluster.kubectl("apply", *ns, "-f", str(job))

    def hung_workers_ready() -> bool:
        pods = kubeflow_pods(cluster, cluster_namespace, "hung", "worker")
        ready = [
            c for p in pods for c in p["status"].get("conditions") or () if c["type"] == "Ready"
        ]
        return len(pods) == 2 and all(c["status"] == "True" for c in ready) and len(ready) == 2

    await eventually(hung_workers_ready, timeout=90, interval=0.5)
    stopped = container_status(cluster, cluster_namespace, "hung-worker-1", "mpi-worker")
    stopped_id = stopped["containerID"].partition("://")[2]
    await cluster.real.commands.ctr("tasks", "kill", "--signal", "SIGSTOP", stopped_id)
    try:
        await eventually(
            lambda: kubeflow_pods(cluster, cluster_namespace, "hung", "launcher"), timeout=30
        )
        (launcher,) = kubeflow_pods(cluster, cluster_namespace, "hung", "launcher")
        gate = ("exec", *ns, launcher["metadata"]["name"], "-c", "gate", "--")
        opened = "touch /tmp/go && echo open"
        await eventually(
            lambda: cluster.kubectl(*gate, "sh", "-c", opened, check=False), timeout=60
        )
        for name, ending in (("pi", "Succeeded"), ("hung", "Failed")):
            wait = ("wait", *ns, f"--for=condition={ending}", f"{MPIJOB}/{name}", "--timeout=120s")
            if "condition met" not in cluster.kubectl(*wait, timeout=130, check=False):
                shown = cluster.kubectl("get", *ns, "-o", "yaml", f"{MPIJOB}/{name}")
                logs = cluster.kubectl("logs", *ns, f"job/{name}-launcher", check=False)
                pytest.fail(f"{name} did not end {ending}:\n{shown}\n{logs}")
    finally:
        await cluster.real.commands.ctr("tasks", "kill", "--signal", "SIGCONT", stopped_id)

    log = cluster.kubectl("logs", *ns, "job/pi-launcher")
    hosts = dict(re.findall(r"^Rank (\d) on host (\S+)$", log, re.M))
    assert hosts == {"0": "pi-worker-0", "1": "pi-worker-1"}, log
    assert set(re.findall(r"^Rank \d runs as uid (\d+) gid (\d+)$", log, re.M)) == {
        ("1000", "1000")
    }, log
    # Both ranks write to one stderr, touch in several writes: their lines may interleave.
    assert "touch: cannot touch '/home/mpiuser/written'" in log, log
    assert log.count(": Read-only file system") == 2, log
    estimate = re.search(r"^pi is approximately (\d+\.\d+)$", log, re.M)
    assert estimate and math.isclose(float(estimate[1]), math.pi, abs_tol=0.01), log
    (pod,) = kubeflow_pods(cluster, cluster_namespace, "pi", "launcher")
    assert sorted(launched(pod, LAUNCHER) or ()) == ["pi-worker-0", "pi-worker-1"], pod["status"]

    log = cluster.kubectl("logs", *ns, "job/hung-launcher")
    assert (
        f"jobcore-agent launch: gave up after {WAIT_SECONDS}s; agents not reached: "
        f"hung-worker-1.hung.{cluster_namespace}.svc.cluster.local\n" in log
    ), log
    (pod,) = kubeflow_pods(cluster, cluster_namespace, "hung", "launcher")
    (ended,) = pod["status"]["containerStatuses"]
    assert ended["state"]["terminated"]["exitCode"] == 124, ended
    assert ended["state"]["terminated"]["message"] == log, ended
    status = cluster.json(*ns, f"{MPIJOB}/hung")["status"]
    failed = condition(status, "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "BackoffLimitExceeded"), status
    assert status["replicaStatuses"]["Launcher"] == {"active": 0, "failed": 1, "succeeded": 0}
