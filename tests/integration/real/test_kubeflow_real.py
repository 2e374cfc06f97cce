"""Real Kubeflow MPIJobs (`kubeflow.org/v2beta1`): mpirun over ssh between process pods.

The launcher is a batch/v1 Job that Kubernetes' own Job controller runs (the test control
plane's kube-controller-manager); the tests read its pod's output, as a Kubeflow user reads
`kubectl logs` of the launcher pod, and the MPIJob's Kubeflow status. The jobs have the shapes
of the seed (Kubeflow's "MPI Training" guide: root, the launcher's mpirun flags, workers
without a command, so the operator gives them `sshd -De`) and of Kubeflow's non-root pi
examples (`examples/v2beta1/pi`). The MPIs come from `scripts/frameworks.sh`; under CI a
missing one fails its test.

Kubeflow's images are folders on the host (`tests.support.kubeflowreal.Image`).
"""

from __future__ import annotations

import math
import pwd
import re
from collections.abc import AsyncIterator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controllers.sandbox import frameworks
from controllers.sandbox import realjobs
from jobcore import BATCH_JOBS
from jobcore import Client
from jobcore import Object
from jobcore.testing import ProcessNode
from jobcore.testing import condition
from jobcore.testing import require
from jobcore.testing import wait_for_pods
from tests.support.kubeflowjobs import kubeflow_controller
from tests.support.kubeflowjobs import mpijob
from tests.support.kubeflowjobs import wait_for_replicas
from tests.support.kubeflowreal import MPI
from tests.support.kubeflowreal import MPIS
from tests.support.kubeflowreal import SSH_PORT
from tests.support.kubeflowreal import Image
from tests.support.kubeflowreal import assert_succeeded
from tests.support.kubeflowreal import finished
from tests.support.kubeflowreal import pi_image
from tests.support.kubeflowreal import run_to_end

SEED_MPIRUN = [
    "mpirun",
    "--allow-run-as-root",
    "-np",
    "2",
    "-bind-to",
    "none",
    "-map-by",
    "slot",
    "-x",
    "PATH",
    "-mca",
    "pml",
    "ob1",
    "-mca",
    "btl",
    "^openib",
]
"""The seed's launcher command up to its program. Every flag applies as it is: Debian's Open
MPI 4.1 has the openib BTL that `^openib` excludes, and ob1 over tcp joins the pods."""

pytestmark = [pytest.mark.integration]


@pytest.fixture
async def node(
    client: Client, namespace: str, control_plane: Any, process_node: ProcessNode
) -> AsyncIterator[ProcessNode]:
    """The namespace's process node, with the kind's controller and Kubernetes' Job
    controller (which makes the launcher Job's pod) running."""
    async with kubeflow_controller(client, namespace, control_plane):
        yield process_node


@pytest.fixture
def user() -> pwd.struct_passwd:
    """The non-root user `scripts/frameworks.sh nonroot` made."""
    require(frameworks.missing("nonroot"))
    return pwd.getpwnam(realjobs.NONROOT_USER)


@pytest.fixture
def image(mpi: str) -> Iterator[Image]:
    """The pi image of the test's `mpi`."""
    with pi_image(mpi) as built:
        yield built


def replicas(count: int, container: dict[str, Any], **pod: Any) -> dict[str, Any]:
    return {"replicas": count, "template": {"spec": {"containers": [container], **pod}}}


def root_job(namespace: str, name: str, mpi: MPI, command: list[str], **run_policy: Any) -> Object:
    """The seed's shape: as root, 2 workers of 1 slot with no command, `command` launching.

    The launcher is created once the workers are Ready (launcherCreationPolicy
    WaitForWorkersReady), so that their names resolve when mpirun starts. Created with them
    (AtStartup), it can start first: its ssh then fails at once ("Could not resolve hostname")
    and its container is restarted (the launcher's restartPolicy OnFailure).
    """
    container = {"name": "tensorflow-benchmarks", "image": "host"}
    launcher = {**container, "command": command, "env": mpi.env()}
    return mpijob(
        namespace,
        name,
        run_policy={"cleanPodPolicy": "Running", **run_policy},
        slotsPerWorker=1,
        launcherCreationPolicy="WaitForWorkersReady",
        mpiImplementation=mpi.implementation,
        mpiReplicaSpecs={"Launcher": replicas(1, launcher), "Worker": replicas(2, container)},
    )


def pi_job(namespace: str, name: str, image: Image, user: pwd.struct_passwd) -> Object:
    """Kubeflow's non-root pi example (pi.yaml, pi-mpich.yaml, pi-intel.yaml) for the image's
    MPI.

    As in the examples, the containers run as the user, the job's keys are mounted in the
    user's ~/.ssh and workers run `sshd -De -f <the image's sshd_config>` (port 2222); MPICH's
    and Intel's workers start through their image's entrypoint and are Ready once their sshd
    accepts connections. The launcher's ssh client learns the port as in Kubeflow's images,
    from /etc/ssh/ssh_config (the image's file, mounted there). Every launcher starts
    through the entrypoint, which waits until the workers' names resolve: Kubeflow's Open MPI
    image has none and its launcher, started with its workers, relies on being restarted in
    its pod (restartPolicy OnFailure) when it ran too early; the entrypoint spares the test that.
    """
    run_as = {"runAsUser": user.pw_uid}
    sshd = ["/usr/sbin/sshd", "-De", "-f", image / "sshd_config"]
    worker: dict[str, Any] = {"name": "mpi-worker", "image": "host", "securityContext": run_as}
    if image.mpi.implementation == "OpenMPI":
        worker |= {"command": sshd[:1], "args": sshd[1:]}
    else:
        probe = {"tcpSocket": {"port": SSH_PORT}, "initialDelaySeconds": 2}
        worker |= {"command": [image / "entrypoint.sh"], "args": sshd, "readinessProbe": probe}
    launcher = {
        "name": "mpi-launcher",
        "image": "host",
        "securityContext": run_as,
        "command": [image / "entrypoint.sh"],
        "args": ["mpirun", "-n", "2", image / "pi"],
        "env": image.mpi.env(),
        "volumeMounts": [{"name": "ssh-config", "mountPath": "/etc/ssh/ssh_config"}],
    }
    ssh_config = {"name": "ssh-config", "hostPath": {"path": image / "ssh_config", "type": "File"}}
    return mpijob(
        namespace,
        name,
        run_policy={"cleanPodPolicy": "Running"},
        slotsPerWorker=1,
        sshAuthMountPath=f"{user.pw_dir}/.ssh",
        mpiImplementation=image.mpi.implementation,
        mpiReplicaSpecs={
            "Launcher": replicas(1, launcher, volumes=[ssh_config]),
            "Worker": replicas(2, worker),
        },
    )


@pytest.mark.timeout(180)
async def test_the_seeds_launcher_command_runs_open_mpi_between_two_workers(
    client: Client, namespace: str, node: ProcessNode, tmp_path: Path
) -> None:
    require(frameworks.missing("openmpi4"))
    program = realjobs.mpi_program("openmpi", tmp_path)
    job = root_job(namespace, "seed", MPIS["openmpi"], [*SEED_MPIRUN, *program])
    run = await run_to_end(client, node, job)
    ranks = sorted(line for line in run.log.splitlines() if line.startswith("rank "))
    assert ranks == [
        "rank 0 of 2 on seed-worker-0: sum=3",
        "rank 1 of 2 on seed-worker-1: sum=3",
    ], run.log
    launcher = run.launcher["metadata"]["name"]
    assert re.fullmatch(r"seed-launcher-[a-z0-9]{5}", launcher), launcher
    assert run.launcher["spec"]["hostname"] == "seed-launcher"
    await assert_succeeded(client, run)
    # cleanPodPolicy Running: the workers' sshd still ran, so they went; the launcher stays.
    await wait_for_pods(client, namespace, {launcher})


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mpi", ["openmpi", "mpich", "intel"])
async def test_kubeflows_pi_example_runs_as_a_non_root_user(
    client: Client, namespace: str, node: ProcessNode, user: pwd.struct_passwd, image: Image
) -> None:
    run = await run_to_end(client, node, pi_job(namespace, "pi", image, user))
    # The entrypoint found each worker under the name the job's hostfile gives it.
    for index in range(2):
        assert f"Resolved pi-worker-{index}.pi.{namespace}.svc.cluster.local\n" in run.log, run.log
    assert "Workers: 2\n" in run.log, run.log
    hosts = dict(re.findall(r"^Rank (\d) on host (\S+)$", run.log, re.M))
    assert hosts == {"0": "pi-worker-0", "1": "pi-worker-1"}, run.log
    ids = set(re.findall(r"^Rank \d runs as uid (\d+) gid (\d+)$", run.log, re.M))
    assert ids == {(str(user.pw_uid), str(user.pw_gid))}, run.log
    estimate = re.search(r"^pi is approximately (\d+\.\d+)$", run.log, re.M)
    assert estimate and math.isclose(float(estimate[1]), math.pi, abs_tol=0.01), run.log
    await assert_succeeded(client, run)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
async def test_a_rank_exiting_3_fails_the_job_with_the_launcher_jobs_reason(
    client: Client, namespace: str, node: ProcessNode, tmp_path: Path, mpi: str
) -> None:
    chosen = MPIS[mpi]
    require(frameworks.missing(chosen.framework))
    program = realjobs.mpi_program(mpi, tmp_path, failing_rank=1)
    mpirun = SEED_MPIRUN if mpi == "openmpi" else ["mpirun", "-n", "2"]
    job = root_job(namespace, "rank3", chosen, [*mpirun, *program], backoffLimit=0)
    # Not restarted in its pod (the launcher's default OnFailure), which the Job controller
    # would count past the backoffLimit and delete, exit code and all: the pod stays Failed.
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    run = await run_to_end(client, node, job)
    assert "rank 0 of 2 on rank3-worker-0: sum=3" in run.log, run.log
    (container,) = run.launcher["status"]["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 3, run.log
    assert finished(run.status) == "Failed", run.status
    # Kubernetes' Job controller failed the launcher Job, and the MPIJob says so in its words
    # (Kubeflow appends "/" and the last failed launcher pod's reason: this pod has none).
    launcher_job = await client.get(BATCH_JOBS, "rank3-launcher", namespace)
    job_failed = condition(launcher_job["status"], "Failed")
    assert job_failed["reason"] == "BackoffLimitExceeded", launcher_job["status"]
    failed = condition(run.status, "Failed")
    assert failed["reason"].split("/")[0] == job_failed["reason"], run.status
    assert failed["message"].startswith(job_failed["message"]), (run.status, job_failed)
    await wait_for_replicas(client, namespace, "rank3", {"Launcher": {"failed": 1}, "Worker": {}})


@pytest.mark.timeout(180)
async def test_a_launcher_started_before_its_workers_names_resolve_waits_for_them(
    client: Client, namespace: str, node: ProcessNode, tmp_path: Path
) -> None:
    """Kubeflow's default, launcherCreationPolicy AtStartup, with backoffLimit 0: the launcher
    starts with its workers, whose names are published only once they are Ready, here 5 s
    after they start. Its ssh would fail at once (`Could not resolve hostname`) and fail the
    job; the launcher's wait lets the user's mpirun, unchanged, start once they resolve."""
    require(frameworks.missing("openmpi4"))
    program = realjobs.mpi_program("openmpi", tmp_path)
    job = root_job(namespace, "early", MPIS["openmpi"], [*SEED_MPIRUN, *program], backoffLimit=0)
    job["spec"]["launcherCreationPolicy"] = "AtStartup"
    replicas = job["spec"]["mpiReplicaSpecs"]
    probe = {"tcpSocket": {"port": 22}, "initialDelaySeconds": 5, "periodSeconds": 1}
    replicas["Worker"]["template"]["spec"]["containers"][0]["readinessProbe"] = probe
    run = await run_to_end(client, node, job)
    assert finished(run.status) == "Succeeded", (run.status, run.log)
    assert run.launcher["spec"]["containers"][0]["command"] == [*SEED_MPIRUN, *program]
    waited = node.logs(namespace, run.launcher["metadata"]["name"], "jobcore-wait-for-workers")
    worker = f"early-worker-0.early.{namespace}.svc.cluster.local"
    assert f"jobcore: worker {worker} does not resolve yet; waiting up to 300s\n" in waited
    resolved = re.search(
        r"^jobcore: every worker's name resolves \(waited (\d+)s\)\n\Z", waited, re.M
    )
    assert resolved and int(resolved[1]) >= 1, waited
    print(f"the launcher waited {resolved[1]} s for its workers' names, then mpirun ran once")
    (container,) = run.launcher["status"]["containerStatuses"]
    assert container["restartCount"] == 0, container
