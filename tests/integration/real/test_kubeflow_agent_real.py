"""Real Kubeflow MPIJobs launched through jobcore's agent (`jobcore.dev/transport: agent`):
Kubeflow's non-root pi example with no sshd anywhere, and Open MPI 5 given only the settings
Kubeflow's operator gives it (Open MPI 4's), which runs every rank on the launcher and exits 0:
the job fails, naming the workers never reached.

The launcher is a batch/v1 Job run by Kubernetes' own Job controller; the agent is the one
`scripts/agent.sh` builds, copied into each pod by its init container.
"""

from __future__ import annotations

import pwd
import re
from collections.abc import AsyncIterator
from collections.abc import Iterator
from typing import Any

import pytest

from controllers.sandbox import frameworks
from controllers.sandbox import realjobs
from jobcore import Client
from jobcore import Object
from jobcore.jobs import AgentSource
from jobcore.launcher import launched
from jobcore.testing import ProcessNode
from jobcore.testing import condition
from jobcore.testing import require
from jobkinds.kubeflow.transport import TRANSPORT_ANNOTATION
from tests.support.kubeflowjobs import kubeflow_controller
from tests.support.kubeflowjobs import mpijob
from tests.support.kubeflowreal import Image
from tests.support.kubeflowreal import assert_succeeded
from tests.support.kubeflowreal import finished
from tests.support.kubeflowreal import pi_image
from tests.support.kubeflowreal import run_to_end

pytestmark = [pytest.mark.integration]


@pytest.fixture
async def node(
    client: Client,
    namespace: str,
    control_plane: Any,
    process_node: ProcessNode,
    agent_source: AgentSource,
) -> AsyncIterator[ProcessNode]:
    async with kubeflow_controller(client, namespace, control_plane, agent_source):
        yield process_node


@pytest.fixture
def image(mpi: str) -> Iterator[Image]:
    with pi_image(mpi) as built:
        yield built


def agent_pi_job(
    namespace: str, name: str, image: Image, user: pwd.struct_passwd, launch: list[str]
) -> Object:
    """Kubeflow's non-root pi example through the agent: the workers' container says no
    command (the agent serves in its place) and no pod mounts an ssh configuration."""
    run_as = {"runAsUser": user.pw_uid}
    worker = {"name": "mpi-worker", "image": "host", "securityContext": run_as}
    launcher = {**worker, "name": "mpi-launcher", "command": launch, "env": image.mpi.env()}
    job = mpijob(
        namespace,
        name,
        run_policy={"cleanPodPolicy": "Running", "backoffLimit": 0},
        slotsPerWorker=1,
        mpiImplementation=image.mpi.implementation,
        mpiReplicaSpecs={
            "Launcher": {
                "replicas": 1,
                "restartPolicy": "Never",  # a failed pod stays, for its exit code and log
                "template": {"spec": {"containers": [launcher]}},
            },
            "Worker": {"replicas": 2, "template": {"spec": {"containers": [worker]}}},
        },
    )
    job["metadata"]["annotations"] = {TRANSPORT_ANNOTATION: "agent"}
    return job


@pytest.fixture
def user() -> pwd.struct_passwd:
    require(frameworks.missing("nonroot"))
    return pwd.getpwnam(realjobs.NONROOT_USER)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mpi", ["openmpi5", "mpich"])
async def test_kubeflows_pi_example_runs_through_the_agent_with_no_sshd(
    client: Client, namespace: str, node: ProcessNode, user: pwd.struct_passwd, image: Image
) -> None:
    job = agent_pi_job(namespace, "pi", image, user, ["mpirun", "-n", "2", image / "pi"])
    run = await run_to_end(client, node, job)
    hosts = dict(re.findall(r"^Rank (\d) on host (\S+)$", run.log, re.M))
    assert hosts == {"0": "pi-worker-0", "1": "pi-worker-1"}, run.log
    assert re.search(r"^pi is approximately 3\.1", run.log, re.M), run.log
    await assert_succeeded(client, run)
    assert sorted(launched(run.launcher, "mpi-launcher") or ()) == ["pi-worker-0", "pi-worker-1"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mpi", ["openmpi5"])
async def test_open_mpi_5_given_open_mpi_4s_settings_runs_on_the_launcher_and_the_job_fails(
    client: Client, namespace: str, node: ProcessNode, user: pwd.struct_passwd, image: Image
) -> None:
    """Kubeflow's operator names the hostfile and the slots for Open MPI 4 alone
    (OMPI_MCA_orte_...), which Open MPI 5 ignores (Kubeflow Trainer issue 4028). jobcore also
    sets Open MPI 5's names; the launcher here unsets them, leaving what Kubeflow sets: mpirun
    places both ranks on the launcher (a slot per core) and exits 0."""
    unset = ["env", "-u", "PRTE_MCA_prte_default_hostfile", "-u", "PRTE_MCA_prte_set_default_slots"]
    job = agent_pi_job(namespace, "wrong", image, user, [*unset, "mpirun", "-n", "2", image / "pi"])
    run = await run_to_end(client, node, job)
    hosts = set(re.findall(r"^Rank \d on host (\S+)$", run.log, re.M))
    assert hosts == {"wrong-launcher"}, run.log
    (container,) = run.launcher["status"]["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 0, run.log
    assert finished(run.status) == "Failed", run.status
    failed = condition(run.status, "Failed")
    assert failed["reason"] == "WorkersNotLaunched", run.status
    assert failed["message"].startswith(
        "The launcher exited 0, but its launch reached 0 of the 2 workers its ranks need; "
        "never reached: wrong-worker-0, wrong-worker-1."
    ), run.status
