"""`jobcore describe` and `jobcore logs` as a user runs them, with a kubeconfig, against the real
API server, the controller and the simulated node, which serves the pods' logs through the API
server as a kubelet does: `logs -f` as its own process, the others through the CLI's `main` in
a thread (a process each would cost a second or more of start-up)."""

from __future__ import annotations

import asyncio

import pytest

from jobcore import Client
from jobcore.testing import SimulatedNode
from jobcore.testing import job_controller
from jobcore.testing import wait_for_phase
from jobkinds.mpijob import MPIJobKind
from tests.support import mpijobs
from tests.support.commands import run_cli
from tests.support.commands import start_jobcore

pytestmark = pytest.mark.integration


async def test_describe_leads_with_the_failed_rank_and_logs_prints_and_follows_a_log(
    client: Client,
    namespace: str,
    kubeconfig_path: str,
    simulated_node: SimulatedNode,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def jobcore(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()  # what the test's own loop logged so far
        return await asyncio.to_thread(run_cli, capsys, *args)

    where = ("-n", namespace, "--kubeconfig", kubeconfig_path)
    async with job_controller(client, MPIJobKind(), namespace=namespace):
        await client.create(mpijobs.MPIJOBS, mpijobs.mpijob(namespace, "exit3"))
        await wait_for_phase(client, mpijobs.MPIJOBS, namespace, "exit3", "Running")
        simulated_node.write_log(namespace, "exit3-worker-1", "mpi-worker", "worker one here\n")
        simulated_node.write_log(namespace, "exit3-launcher", "mpi-launcher", "step 1\n")

        follower = await start_jobcore("logs", "mpijob/exit3", "-f", *where)
        assert follower.stdout is not None
        # The first line waits for the process to start too: 30 s was not enough once, at
        # the loaded end of a full CI-style run.
        assert await asyncio.wait_for(follower.stdout.readline(), 90) == b"step 1\n"
        simulated_node.write_log(
            namespace, "exit3-launcher", "mpi-launcher", "\x1b[2Jrank 1 exited with 3\n"
        )
        assert b"rank 1 exited with 3" in await asyncio.wait_for(follower.stdout.readline(), 30)
        await simulated_node.fail(namespace, "exit3-launcher", exit_code=3)
        assert await asyncio.wait_for(follower.wait(), 30) == 0, "-f ends with the container"
        await wait_for_phase(client, mpijobs.MPIJOBS, namespace, "exit3", "Failed")

        code, screen, _ = await jobcore("describe", "mpijob/exit3", *where)
        assert code == 0, screen
        print(screen)
        assert "What failed: pod exit3-launcher (launcher-0), exit code 3" in screen
        assert "exit3-worker-1" in screen and "worker-1" in screen  # the pods, by rank
        assert "Failed" in screen.split("Events:")[1]  # the controller's Event
        tail = screen.split("Log (last 20 lines):")[1]
        assert "step 1" in tail and "\\x1b[2Jrank 1 exited with 3" in tail
        assert "\x1b" not in screen, "a log cannot move the terminal's cursor"

        code, log, _ = await jobcore("logs", "mpijob/exit3", "--replica", "worker-1", *where)
        assert (code, log) == (0, "worker one here\n")
        code, _, said = await jobcore("describe", "mpijob/nonesuch", *where)
        assert code == 1 and f"mpijob/nonesuch not found in namespace {namespace}" in said
        code, _, said = await jobcore("logs", "nokind/exit3", *where)
        assert code != 0 and "'nokind' is no installed kind" in said, said
