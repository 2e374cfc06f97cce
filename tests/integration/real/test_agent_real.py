"""Real MPI without ssh: MPIJobs launched through jobcore's agent between process pods.

The agent is built by `scripts/agent.sh` (Go, from Debian's toolchain); the node runs the
init container that copies it into each pod, the workers' agents, and the launcher's MPI
with the agent as its remote shell. No sshd runs anywhere, but in the one test that shows an
unsafe environment refused over ssh and through the agent alike.
"""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

import pytest

from controllers.sandbox import frameworks
from controllers.sandbox import realjobs
from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import Client
from jobcore.jobs import AgentSource
from jobcore.launcher import launched
from jobcore.testing import ProcessNode
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import require
from jobcore.testing import spec_with
from jobcore.testing import wait_for_end
from jobkinds.mpijob import MPIJobKind
from tests.support.mpioutput import on_two_workers
from tests.support.mpioutput import ranks
from tests.support.realruns import run_to_end

KIND = MPIJobKind()

pytestmark = [pytest.mark.integration]


async def run_agent_mpi(
    client: Client, node: ProcessNode, namespace: str, folder: Path, mpi: str, **changes: Any
) -> tuple[dict[str, Any], str]:
    require(frameworks.missing(realjobs.MPIS[mpi].framework))
    command = realjobs.mpi_program(mpi, folder, failing_rank=changes.pop("failing_rank", None))
    name = changes.pop("name")
    job = realjobs.mpi_job(mpi, folder, command, name=name, namespace=namespace)
    job["spec"] = spec_with(job["spec"], transport="agent", **changes)
    del job["spec"]["ssh"]
    return await run_to_end(client, node, KIND.resource, job, container="mpi-launcher")


@pytest.mark.usefixtures("agent_controller")
@pytest.mark.parametrize("mpi", ["openmpi", "openmpi5", "mpich", "intel"])
async def test_an_mpijob_runs_its_ranks_through_the_agent_and_an_idle_worker_fails_nothing(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path, mpi: str
) -> None:
    """3 workers of 2 slots, 4 ranks: they fill the first two workers. Open MPI starts its
    daemon on every hostfile host all the same; Hydra starts proxies only where ranks go. The
    third worker, which needs none, does not fail the job either way (docs/agent.md)."""
    per_node = realjobs.MPIS[mpi].per_node_flag
    count = "-np" if mpi.startswith("openmpi") else "-n"
    worker = {"replicas": 3, "extraMPIArgs": [per_node, "2", count, "4"]}
    status, log = await run_agent_mpi(
        client, process_node, namespace, tmp_path, mpi, name="agent", worker=worker
    )
    assert status["phase"] == "Succeeded", log
    if mpi != "intel":
        assert ranks(log) == on_two_workers("agent"), log
    launcher = await client.get(PODS, "agent-launcher", namespace)
    daemons = ["agent-worker-0", "agent-worker-1"]
    if mpi.startswith("openmpi"):
        daemons.append("agent-worker-2")
    assert sorted(launched(launcher, "mpi-launcher") or ()) == daemons


@pytest.mark.usefixtures("agent_controller")
async def test_a_rank_exiting_3_through_the_agent_fails_the_job_with_its_exit_code(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path
) -> None:
    status, log = await run_agent_mpi(
        client, process_node, namespace, tmp_path, "openmpi", name="rank3", failing_rank=2
    )
    assert status["phase"] == "Failed", log
    failure = condition(status, "ReplicaFailure")
    assert "exited with error code 3" in failure["message"], (failure, log)


SILENT_AGENT = """#!/bin/bash
# Installed as the pods' jobcore-agent: a worker's `serve` accepts connections and never says a
# word; every other use (the launcher's launch and rsh, by any of its names) is the real agent's.
if [ "$1" = serve ]; then
  exec python3 -c '
import socket
server = socket.create_server(("", 2222), reuse_port=True)
held = []
while True:
    held.append(server.accept()[0])
'
fi
exec -a "$0" "$(dirname "$0")/real-agent" "$@"
"""
SILENT_INSTALL = """#!/bin/bash
# `install DIR`, as the agent's init container runs it: the real agent, then the silent one
# in its place.
set -e
"$REAL" install "$2"
mv "$2/jobcore-agent" "$2/real-agent"
cp "$SILENT" "$2/jobcore-agent"
"""


@pytest.fixture
def silent_agent(agent_source: AgentSource, tmp_path: Path) -> AgentSource:
    """An agent whose workers' side never answers (SILENT_INSTALL)."""
    silent, install = tmp_path / "silent-agent", tmp_path / "install"
    silent.write_text(SILENT_AGENT)
    real, copied = shlex.quote(agent_source.path), shlex.quote(str(silent))
    install.write_text(SILENT_INSTALL.replace('"$REAL"', real).replace('"$SILENT"', copied))
    for path in (silent, install, tmp_path):
        path.chmod(0o755)
    return AgentSource(image="jobcore:test", path=str(install))


async def test_workers_whose_agent_never_answers_fail_the_job_once_the_launchers_wait_ends(
    client: Client,
    namespace: str,
    process_node: ProcessNode,
    tmp_path: Path,
    silent_agent: AgentSource,
) -> None:
    """The workers accept connections (and are Ready) but their agent never greets: the
    launcher's wait gives up after JOBCORE_WAIT_SECONDS (here 3 s, set by the user in
    the container's env) with 124, naming the workers; mpirun never starts."""
    require(frameworks.missing("openmpi4"))
    command = realjobs.mpi_program("openmpi", tmp_path)
    job = realjobs.mpi_job("openmpi", tmp_path, command, name="silent", namespace=namespace)
    job["spec"]["transport"] = "agent"
    container = job["spec"]["worker"]["template"]["spec"]["containers"][0]
    container["env"].append({"name": "JOBCORE_WAIT_SECONDS", "value": "3"})
    async with job_controller(client, KIND, namespace=namespace, agent=silent_agent):
        status, log = await run_to_end(
            client, process_node, KIND.resource, job, container="mpi-launcher"
        )
    assert status["phase"] == "Failed", log
    assert "jobcore: starting" not in log, log
    failure = condition(status, "ReplicaFailure")["message"]
    assert failure.startswith(
        "Pod[silent-launcher] exited with error code 124 (container mpi-launcher): "
        "jobcore-agent launch: gave up after 3s; agents not reached: silent-worker-0."
    ), failure


@pytest.mark.timeout(240)  # its own waits: 60 s for the sleepers, 120 s for the end
@pytest.mark.usefixtures("agent_controller")
async def test_a_worker_killed_mid_run_through_the_agent_restarts_the_job_which_then_succeeds(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path
) -> None:
    """runPolicy.backoffLimit 1: the deleted worker's agent exits 0 on SIGTERM, a stop before
    the launcher's end, which restarts the job once (new pods, the same Secret and agent key);
    its second run, told to finish, succeeds through the agent."""
    require(frameworks.missing("openmpi4"))
    done, sleeping = tmp_path / "done", tmp_path / "sleeping"
    sleeping.mkdir()
    # Each of the first run's four ranks leaves a file before it sleeps, so `done` is touched
    # only once none of them can still see it and end the run at once.
    script = 'test -e "$0" && exit 0; mktemp -p "$1" >/dev/null; exec sleep 600'
    rank = ["/bin/sh", "-c", script, str(done), str(sleeping)]
    job = realjobs.mpi_job("openmpi", tmp_path, rank, name="killed", namespace=namespace)
    job["spec"] |= {"transport": "agent", "runPolicy": {"backoffLimit": 1}}
    await client.create(KIND.resource, job)

    await eventually(lambda: len(list(sleeping.iterdir())) == 4, timeout=60, interval=0.2)
    done.touch()  # the next run's ranks end at once
    await client.delete(PODS, "killed-worker-1", namespace, grace_period_seconds=1)
    status = await wait_for_end(client, KIND.resource, namespace, "killed", timeout=120)
    assert (status["phase"], status.get("restarts")) == ("Succeeded", 1), status["conditions"]
    launcher = await client.get(PODS, "killed-launcher", namespace)
    reached = sorted(launched(launcher, "mpi-launcher") or ())
    assert reached == ["killed-worker-0", "killed-worker-1"], launcher["status"]


@pytest.mark.usefixtures("agent_controller")
async def test_a_configmap_cannot_make_the_workers_shell_run_a_command_over_either_transport(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path
) -> None:
    """envFrom brings what validation never sees: a launch agent that Open MPI 4 would hand
    to the workers' shell. Over ssh the launcher's bash checks the environment, through the
    agent `jobcore-agent launch` does (no bash needed); either starts nothing, and the job
    says why. Both jobs run at once, to save the suite's time."""
    canary = tmp_path / "canary"
    settings = {"OMPI_MCA_btl": "^openib", "OMPI_MCA_orte_launch_agent": f"orted;touch {canary};"}
    metadata = {"name": "mpi-settings", "namespace": namespace}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": settings}
    await client.create(CONFIGMAPS, configmap)
    require(frameworks.missing("openmpi4"))
    transports = ("ssh", "agent")
    jobs = []
    for transport in transports:
        folder = tmp_path / transport
        folder.mkdir()
        command = realjobs.mpi_program("openmpi", folder)
        job = realjobs.mpi_job("openmpi", folder, command, name=transport, namespace=namespace)
        job["spec"]["transport"] = transport
        container = job["spec"]["worker"]["template"]["spec"]["containers"][0]
        container["envFrom"] = [{"configMapRef": {"name": "mpi-settings"}}]
        jobs.append(job)
    ended = await asyncio.gather(
        *(
            run_to_end(client, process_node, KIND.resource, job, container="mpi-launcher")
            for job in jobs
        )
    )
    for transport, (status, log) in zip(transports, ended, strict=True):
        assert status["phase"] == "Failed", (transport, log)
        failure = condition(status, "ReplicaFailure")["message"]
        assert failure.startswith(
            f"Pod[{transport}-launcher] exited with error code 65 (container mpi-launcher): "
            "jobcore: not starting mpirun: unsafe for the workers' shell: "
            "OMPI_MCA_orte_launch_agent (Open MPI"
        ), failure
    assert not canary.exists()
