"""What MPIJob, HorovodJob and ColossalAIJob do alike, end to end: the real controller of each
kind, a real API server, the simulated node. Each kind's own file tests what is its own."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from jobcore import CONFIGMAPS
from jobcore import Client
from jobcore.testing import SimulatedNode
from jobcore.testing import condition
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import wait_for_events
from tests.support import launchers
from tests.support.kindjobs import LAUNCHER_KINDS
from tests.support.kindjobs import LauncherKind

pytestmark = pytest.mark.integration


@pytest.fixture(params=LAUNCHER_KINDS, ids=lambda kind: kind.resource.kind)
async def kind(
    request: pytest.FixtureRequest, client: Client, namespace: str
) -> AsyncIterator[LauncherKind]:
    """Each launcher kind in turn, its controller running for the test's namespace."""
    launcher_kind: LauncherKind = request.param
    async with job_controller(client, launcher_kind.kind, namespace=namespace):
        yield launcher_kind


async def test_workers_then_the_launcher_and_success(
    client: Client, namespace: str, kind: LauncherKind
) -> None:
    await launchers.run_after_ready_workers(
        client, kind.resource, kind.job(namespace, "ok"), workers=2
    )
    hostfile = (await client.get(CONFIGMAPS, "ok-hostfile", namespace))["data"]["hostfile"]
    hosts = [f"ok-worker-{i}.ok.{namespace}.svc.cluster.local" for i in (0, 1)]
    assert hostfile == "".join(kind.host_line.format(host=host) + "\n" for host in hosts)


async def test_launcher_failure_fails_the_job_naming_the_pod_and_exit_code(
    client: Client, namespace: str, kind: LauncherKind, simulated_node: SimulatedNode
) -> None:
    job = kind.job(namespace, "bad")
    status = await launchers.fail_by_launcher(
        client, simulated_node, kind.resource, job, exit_code=3
    )
    failed = condition(status, "Failed")
    assert (failed["status"], failed["message"]) == ("True", "The job exited with an error code.")
    failure = condition(status, "ReplicaFailure")
    assert failure["status"] == "True"
    assert failure["message"] == (
        f"Pod[bad-launcher] exited with error code 3 (container {kind.launcher})"
    )
    await wait_for_events(client, namespace, "bad", "Failed")


async def test_a_failed_worker_fails_the_job_naming_it(
    client: Client, namespace: str, kind: LauncherKind, simulated_node: SimulatedNode
) -> None:
    job = kind.job(namespace, "killed")
    worker = "killed-worker-1"
    status = await launchers.fail_by_worker(
        client, simulated_node, kind.resource, job, worker=worker
    )
    failure = condition(status, "ReplicaFailure")
    assert failure["status"] == "True"
    assert failure["message"] == (
        f"Pod[{worker}] exited with error code 137 (container {kind.worker}, OOMKilled)"
    )
    assert (await live_pods(client, namespace))[worker]["spec"]["restartPolicy"] == "Never"


async def test_clean_up_workers_deletes_workers_and_keeps_the_launcher(
    client: Client, namespace: str, kind: LauncherKind, simulated_node: SimulatedNode
) -> None:
    job = kind.job(namespace, "tidy", runPolicy={"cleanUpWorkers": True})
    await launchers.succeed_cleaning_up_workers(client, simulated_node, kind.resource, job)

    async def reported() -> bool:
        status = await job_status(client, kind.resource, namespace, "tidy")
        return bool(status["aggregate"]["deleted"] == 2)

    await eventually(reported)
    assert (await job_status(client, kind.resource, namespace, "tidy"))["phase"] == "Succeeded"
