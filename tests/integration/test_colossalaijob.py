"""ColossalAIJob end to end: the real controller, a real API server, the simulated node."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Client
from jobcore import Controller
from jobcore import Object
from jobcore.testing import SimulatedNode
from jobcore.testing import condition
from jobcore.testing import controller_uids
from jobcore.testing import create_until_phase
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import wait_for_phase
from jobkinds.colossalaijob import ColossalAIJobKind
from tests import launchers

pytestmark = pytest.mark.integration

KIND = ColossalAIJobKind()
JOBS = KIND.resource
SAMPLE = Path(__file__).resolve().parents[2] / "manifests/samples/colossalaijob-example.yaml"


def colossalaijob(namespace: str, name: str, **spec: Any) -> Object:
    job: Object = {
        "apiVersion": JOBS.api_version,
        "kind": JOBS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "launcher": {"image": "colossalai:latest", "workingDir": "/workspace"},
            "worker": {
                "replicas": 2,
                "procPerWorker": 2,
                "command": ["train.py", "--epochs", "1"],
                "torchArgs": ["--max_restarts=0"],
                "template": {"spec": {"containers": [{"name": "worker", "image": "c:latest"}]}},
            },
        },
    }
    job["spec"].update(spec)
    return job


@pytest.fixture
async def controller(client: Client, namespace: str) -> AsyncIterator[Controller]:
    """The ColossalAIJob controller, scoped to the test's namespace."""
    async with job_controller(client, KIND, namespace=namespace) as controller:
        yield controller


async def test_workers_then_the_launcher_and_success(
    client: Client, namespace: str, controller: Controller
) -> None:
    job = colossalaijob(namespace, "ok")
    status = await launchers.run_after_ready_workers(client, JOBS, job, workers=2)
    assert condition(status, "Completed")["status"] == "True"
    assert [task["type"] for task in status["tasks"]] == ["launcher", "worker"]
    owner = (await client.get(JOBS, "ok", namespace))["metadata"]["uid"]
    children = [(SECRETS, "ok-ssh"), (CONFIGMAPS, "ok-hostfile"), (SERVICES, "ok")]
    children += [(PODS, "ok-worker-1"), (PODS, "ok-launcher")]
    assert await controller_uids(client, namespace, children) == [owner] * 5
    hostfile = (await client.get(CONFIGMAPS, "ok-hostfile", namespace))["data"]["hostfile"]
    assert hostfile == f"ok-worker-0.ok.{namespace}.svc\nok-worker-1.ok.{namespace}.svc\n"
    launcher = (await client.get(PODS, "ok-launcher", namespace))["spec"]["containers"][0]
    assert launcher["workingDir"] == "/workspace"
    assert launcher["command"][4:] == [
        "run",
        "--hostfile",
        "/etc/colossalai/hostfile",
        "--nproc_per_node",
        "2",
        "--master_addr",
        f"ok-worker-0.ok.{namespace}.svc",
        "--master_port",
        "29500",
        "--extra_launch_args",
        "max_restarts=0",
        "--",
        "train.py",
        "--epochs",
        "1",
    ]


async def test_launcher_failure_fails_the_job_naming_the_pod_and_exit_code(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    job = colossalaijob(namespace, "bad")
    status = await launchers.fail_by_launcher(client, simulated_node, JOBS, job, exit_code=1)
    assert condition(status, "Failed")["status"] == "True"
    failure = condition(status, "ReplicaFailure")
    assert failure["status"] == "True"
    assert failure["message"] == "Pod[bad-launcher] exited with error code 1 (container launcher)"


async def test_a_failed_worker_fails_the_job_naming_it(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    job = colossalaijob(namespace, "killed")
    worker = "killed-worker-1"
    status = await launchers.fail_by_worker(client, simulated_node, JOBS, job, worker=worker)
    failure = condition(status, "ReplicaFailure")
    assert failure["status"] == "True"
    assert failure["message"].startswith("Pod[killed-worker-1] exited with error code 137")
    pod = (await live_pods(client, namespace))[worker]
    assert pod["spec"]["restartPolicy"] == "Never"


async def test_clean_up_workers_deletes_workers_and_keeps_the_launcher(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    job = colossalaijob(namespace, "tidy", runPolicy={"cleanUpWorkers": True})
    await launchers.succeed_cleaning_up_workers(client, simulated_node, JOBS, job)
    assert (await job_status(client, JOBS, namespace, "tidy"))["phase"] == "Succeeded"


async def test_an_invalid_job_fails_with_the_field_named_and_creates_nothing(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    broken = colossalaijob(namespace, "broken")
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
    job = copy.deepcopy(yaml.safe_load(SAMPLE.read_text()))
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
