"""Real Horovod without ssh: HorovodJobs launched through jobcore's agent between process pods.

horovodrun runs `ssh` itself (its ssh check, its task servers, every gloo rank) and, with
`--mpi`, Open MPI's mpirun its own remote shell: both reach the workers' agents, which serve in
place of sshd. One job per case (static gloo, static `--mpi`, elastic gloo), all three at once
(to save the suite's time), each run to its end once and read for several things.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from controllers.sandbox import realjobs
from controllers.sandbox.frameworks import missing
from jobcore import PODS
from jobcore import Client
from jobcore.launcher import AGENT
from jobcore.launcher import LAUNCHER
from jobcore.launcher import launched
from jobcore.testing import ProcessNode
from jobcore.testing import container_named
from jobcore.testing import eventually
from jobcore.testing import require
from jobcore.testing import wait_for_end
from jobkinds.horovodjob import HorovodJobKind
from tests.support import mpioutput
from tests.support.realruns import elastic_horovod_job
from tests.support.realruns import launcher_log
from tests.support.realruns import run_to_end

pytestmark = pytest.mark.integration

KIND = HorovodJobKind()
ELASTIC_SECONDS = 60
"""How long the elastic program trains at most: the test stops it once it trains on both."""


async def run_elastic(
    client: Client, node: ProcessNode, namespace: str, folder: Path
) -> tuple[dict[str, Any], str]:
    """An elastic job of 1 to 3 workers, 2 at first, stopped once it trains on both."""
    stop = folder / "stop"
    cmd = realjobs.horovod_elastic(folder, str(stop), ELASTIC_SECONDS)
    job = elastic_horovod_job(realjobs.horovod_job(cmd, name="elastic", namespace=namespace))
    job["spec"]["transport"] = "agent"
    await client.create(KIND.resource, job)

    def log() -> str:
        return launcher_log(node, namespace, "elastic")

    try:
        await eventually(lambda: "size=2 ranks=2" in log(), timeout=60, interval=0.3)
    except TimeoutError as exc:
        exc.add_note(f"no training on both workers; the launcher's output:\n{log()}")
        raise
    stop.touch()  # every rank reads the host's files
    status = await wait_for_end(client, KIND.resource, namespace, "elastic", explain=log)
    return status, log()


async def run_static(
    client: Client, node: ProcessNode, namespace: str, folder: Path, backend: str
) -> tuple[dict[str, Any], str]:
    """A static job of 2 workers x 2 slots over `backend`, named after it, run to its end; its
    ranks checked in the launcher's output."""
    cmd = realjobs.horovod_allreduce(folder)
    job = realjobs.horovod_job(cmd, name=backend, namespace=namespace)
    job["spec"] |= {"horovod": {"backend": backend}, "transport": "agent"}
    status, log = await run_to_end(
        client, node, KIND.resource, job, container=LAUNCHER, timeout=150
    )
    assert mpioutput.ranks(log, prefix=".*") == mpioutput.on_two_workers(backend), log
    return status, log


@pytest.mark.timeout(240)
@pytest.mark.usefixtures("agent_controller")
async def test_horovodjobs_run_on_both_workers_through_the_agent_without_sshd(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path
) -> None:
    require(missing("horovod"))
    cases = ("gloo", "mpi", "elastic")
    for case in cases:
        (tmp_path / case).mkdir()
    runs = await asyncio.gather(
        run_static(client, process_node, namespace, tmp_path / "gloo", "gloo"),
        run_static(client, process_node, namespace, tmp_path / "mpi", "mpi"),
        run_elastic(client, process_node, namespace, tmp_path / "elastic"),
    )
    for case, (status, log) in zip(cases, runs, strict=True):
        assert status["phase"] == "Succeeded", log
        workers = [f"{case}-worker-0", f"{case}-worker-1"]
        for name in workers:  # the agent serves in sshd's place
            pod = await client.get(PODS, name, namespace)
            assert container_named(pod, "worker")["command"][:2] == [AGENT, "serve"], pod
        launcher = await client.get(PODS, f"{case}-launcher", namespace)
        assert sorted(launched(launcher, LAUNCHER) or ()) == workers, log
