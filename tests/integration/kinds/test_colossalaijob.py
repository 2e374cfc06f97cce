"""ColossalAIJob end to end: the real controller, a real API server, the simulated node."""

from __future__ import annotations

import pytest

from jobcore import PODS
from jobcore import Client
from jobcore import Controller
from jobcore.testing import SimulatedNode
from jobcore.testing import condition
from jobcore.testing import create_until_phase
from jobcore.testing import live_pods
from jobcore.testing import wait_for_phase
from tests.support import launchers
from tests.support.fixtures import controller_fixture
from tests.support.jobdocs import sample
from tests.support.kindjobs import COLOSSALAIJOB

pytestmark = pytest.mark.integration

KIND = COLOSSALAIJOB.kind
JOBS = COLOSSALAIJOB.resource


controller = controller_fixture(KIND)


async def test_the_launcher_runs_colossalai_run_in_its_working_dir(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await create_until_phase(client, JOBS, COLOSSALAIJOB.job(namespace, "ok"), "Running")
    launcher = (await client.get(PODS, "ok-launcher", namespace))["spec"]["containers"][0]
    assert launcher["workingDir"] == "/workspace"
    assert launcher["command"][4:] == [
        "run",
        "--hostfile",
        "/etc/colossalai/hostfile",
        "--nproc_per_node",
        "2",
        "--master_addr",
        f"ok-worker-0.ok.{namespace}.svc.cluster.local",
        "--master_port",
        "29500",
        "--extra_launch_args",
        "max_restarts=0",
        "--",
        "train.py",
        "--epochs",
        "1",
    ]


async def test_an_invalid_job_fails_with_the_field_named_and_creates_nothing(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    broken = COLOSSALAIJOB.job(namespace, "broken")
    broken["spec"]["worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    broken["spec"]["worker"]["torchArgs"] = ["--nnodes=3"]
    status = await create_until_phase(client, JOBS, broken, "Failed", timeout=20)
    failed = condition(status, "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert (
        'spec.worker.template.spec.containers: needs a container named "worker"'
        in (failed["message"])
    )
    assert "spec.worker.torchArgs[0]" in failed["message"]
    assert await live_pods(client, namespace) == {}


async def test_the_seed_example_is_accepted_and_reconciled(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(launchers.LAUNCHER, exit_code=0, after=0.2)
    job = sample("colossalaijob-example")
    job["metadata"]["namespace"] = namespace
    await client.create(JOBS, job)
    name = job["metadata"]["name"]
    stored = await client.get(JOBS, name, namespace)
    assert stored["spec"]["worker"]["procPerWorker"] == 1  # not pruned: the CRD names it
    assert stored["spec"]["ssh"]["authMountPath"] == "/root/.ssh"
    await wait_for_phase(client, JOBS, namespace, name, "Succeeded", timeout=20)
    current = await live_pods(client, namespace)
    assert set(current) == {f"{name}-worker-0", f"{name}-worker-1", f"{name}-launcher"}
    launcher = current[f"{name}-launcher"]["spec"]["containers"][0]
    assert launcher["image"] == "hpcaitech/colossalai:0.3.0"
    assert launcher["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert launcher["command"][-3:] == ["--", "train.py", "arg1"]
