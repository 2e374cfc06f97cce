"""Real MPI: MPIJobs run mpirun over ssh between pods on the process-backed node."""

from __future__ import annotations

import asyncio
import io
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.allreduce import compile_allreduce
from controllers.sandbox import run_sandbox
from jobcore import PODS, Client, Controller, Object
from jobcore.testing import (
    ProcessNode,
    background,
    eventually,
    job_controller,
    process_node_available,
)
from jobkinds.mpijob import MPIJobKind

KIND = MPIJobKind()
SEED_EXAMPLE = (
    Path(__file__).resolve().parents[2] / "manifests" / "samples" / "mpijob-random-walk.yaml"
)
MPIJOBS = KIND.resource

_unavailable = process_node_available() or (
    None
    if shutil.which("mpicc") and shutil.which("mpirun") and Path("/usr/sbin/sshd").exists()
    else "needs Open MPI (mpicc, mpirun) and openssh-server: scripts/host-packages.sh installs them"
)
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(_unavailable is not None, reason=_unavailable or ""),
]


@pytest.fixture(scope="module")
def allreduce(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The MPI program, compiled with mpicc at test time."""
    yield compile_allreduce(tmp_path_factory.mktemp("mpi"))


@pytest.fixture
async def node(client: Client, namespace: str) -> AsyncIterator[ProcessNode]:
    node = ProcessNode(client, name=f"proc-{namespace}"[:63], namespace=namespace)
    async with background(node.run()) as task:
        await eventually(lambda: node.pods.has_synced() or task.done(), timeout=30)
        if task.done():
            task.result()  # a failed start-up, raised here rather than hanging
        yield node


@pytest.fixture
async def controller(client: Client, namespace: str) -> AsyncIterator[Controller]:
    async with job_controller(client, KIND, namespace=namespace) as controller:
        yield controller


def mpijob(namespace: str, name: str, cmd: list[str], **spec: Any) -> Object:
    env = [
        {"name": "OMPI_ALLOW_RUN_AS_ROOT", "value": "1"},
        {"name": "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "value": "1"},
    ]
    job: Object = {
        "apiVersion": MPIJOBS.api_version,
        "kind": MPIJOBS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "worker": {
                "replicas": 2,
                "extraMPIArgs": ["-N", "2"],
                "cmd": cmd,
                "template": {
                    "spec": {"containers": [{"name": "mpi-worker", "image": "host", "env": env}]}
                },
            },
            "mpiHome": "/usr",
            "ssh": {"sshdPath": "/usr/sbin/sshd"},
        },
    }
    job["spec"].update(spec)
    return job


async def final_status(client: Client, namespace: str, name: str) -> dict[str, Any]:
    async def ended() -> bool:
        status = (await client.get(MPIJOBS, name, namespace)).get("status") or {}
        return status.get("phase") in ("Succeeded", "Failed")

    await eventually(ended, timeout=120, interval=0.2)
    status: dict[str, Any] = (await client.get(MPIJOBS, name, namespace))["status"]
    return status


async def test_two_workers_by_two_slots_allreduce_for_real(
    client: Client, namespace: str, controller: Controller, node: ProcessNode, allreduce: Path
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "allreduce", [str(allreduce)]))
    status = await final_status(client, namespace, "allreduce")
    log = node.logs(namespace, "allreduce-launcher", "mpi-launcher")
    assert status["phase"] == "Succeeded", log
    ranks = sorted(line for line in log.splitlines() if line.startswith("rank "))
    assert len(ranks) == 4, log
    assert all(line.endswith("sum=10") for line in ranks), log
    hosts = {line.split(" on ")[1].split(":")[0] for line in ranks}
    assert hosts == {"allreduce-worker-0", "allreduce-worker-1"}


async def test_a_rank_exiting_3_fails_the_job_with_the_launchers_exit_code(
    client: Client, namespace: str, controller: Controller, node: ProcessNode, allreduce: Path
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "rank3", [str(allreduce), "2"]))
    status = await final_status(client, namespace, "rank3")
    assert status["phase"] == "Failed"
    failure = next(c for c in status["conditions"] if c["type"] == "ReplicaFailure")
    assert (
        "rank3-launcher" in failure["message"] and "exited with error code 3" in failure["message"]
    ), failure


async def test_the_seeds_mpi_flags_are_valid_for_real_open_mpi(
    client: Client, namespace: str, controller: Controller, node: ProcessNode, allreduce: Path
) -> None:
    """The seed's first example's flags, word for word: mca, mpiHome, extraMPIArgs, sshdPath."""
    seed = yaml.safe_load(SEED_EXAMPLE.read_text())["spec"]
    job = mpijob(namespace, "seedflags", [str(allreduce)], mca=seed["mca"])
    job["spec"]["worker"]["extraMPIArgs"] = seed["worker"]["extraMPIArgs"]
    job["spec"]["ssh"] = seed["ssh"]
    await client.create(MPIJOBS, job)
    status = await final_status(client, namespace, "seedflags")
    log = node.logs(namespace, "seedflags-launcher", "mpi-launcher")
    assert status["phase"] == "Succeeded", log
    ranks = [line for line in log.splitlines() if line.startswith("rank ")]
    assert len(ranks) == 6 and all(line.endswith("sum=21") for line in ranks), log


async def test_a_worker_killed_mid_run_fails_the_job_and_leaves_nothing_behind(
    client: Client, namespace: str, controller: Controller, node: ProcessNode
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "killed", ["sleep", "600"]))

    async def launcher_running() -> bool:
        try:
            pod = await client.get(PODS, "killed-launcher", namespace)
        except Exception:
            return False
        return bool((pod.get("status") or {}).get("phase") == "Running")

    await eventually(launcher_running, timeout=60, interval=0.2)
    victim = await client.get(PODS, "killed-worker-1", namespace)
    netns = "jc-" + victim["metadata"]["uid"].replace("-", "")[:8]
    assert netns in await netns_list()
    await client.delete(PODS, "killed-worker-1", namespace, grace_period_seconds=1)
    status = await final_status(client, namespace, "killed")
    assert status["phase"] == "Failed"
    failure = next(c for c in status["conditions"] if c["type"] == "ReplicaFailure")
    assert "killed-worker-1" in failure["message"], failure
    await eventually(lambda: _gone(netns), timeout=20, interval=0.2)


async def _gone(netns: str) -> bool:
    return netns not in await netns_list()


async def netns_list() -> str:
    process = await asyncio.create_subprocess_exec(
        "ip", "netns", "list", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    return out.decode()


async def test_the_sandbox_runs_the_sample_for_real() -> None:
    out = io.StringIO()
    phase = await run_sandbox(real=True, out=out)
    assert phase == "Succeeded", out.getvalue()
    ranks = [line for line in out.getvalue().splitlines() if line.startswith("rank ")]
    assert len(ranks) == 4 and all(line.endswith("sum=10") for line in ranks), out.getvalue()
