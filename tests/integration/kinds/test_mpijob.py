"""MPIJob end to end: the real controller, a real API server, the simulated node."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobcore import CONFIGMAPS
from jobcore import EVENTS
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Client
from jobcore import Controller
from jobcore import Manager
from jobcore import Object
from jobcore import Request
from jobcore.jobs import T9kScheduler
from jobcore.jobs import add_job_controller
from jobcore.jobs import crd_for
from jobcore.testing import SimulatedNode
from jobcore.testing import api_requests
from jobcore.testing import background
from jobcore.testing import condition
from jobcore.testing import create_until_phase
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import resync
from jobcore.testing import schemaless_crd
from jobcore.testing import wait_for_deletion
from jobcore.testing import wait_for_events
from jobcore.testing import wait_for_phase
from jobcore.testing import wait_until_settled
from jobkinds.mpijob import MPIJobKind
from tests.support import launchers
from tests.support import mpijobs
from tests.support.fixtures import controller_fixture

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
MPIJOBS = KIND.resource
SAMPLES = Path(__file__).resolve().parents[3] / "manifests" / "samples"


def mpijob(namespace: str, name: str, *, replicas: int = 2, **spec: Any) -> Object:
    """The plain MPIJob of tests.support.mpijobs, with the mpirun options these tests see
    rendered."""
    options = {"mca": {"btl": "^openib"}, "mpiHome": "/usr/local", **spec}
    job = mpijobs.mpijob(namespace, name, replicas=replicas, **options)
    job["spec"]["worker"].update(extraMPIArgs=["-N", "2"], cmd=["./allreduce"])
    return job


controller = controller_fixture(KIND)


def writes() -> float:
    """The API writes this process has sent, the test's own included."""
    return sum(api_requests(method) for method in ("POST", "PUT", "PATCH", "DELETE"))


async def event_counts(client: Client, namespace: str, name: str) -> dict[str, int]:
    """How often each reason was recorded about `name`: repeats patch one Event's count."""
    items = (await client.list(EVENTS, namespace))["items"]
    return {e["reason"]: e.get("count", 1) for e in items if e["involvedObject"]["name"] == name}


async def test_a_worker_that_never_becomes_ready_holds_the_launcher_back(
    client: Client, namespace: str, controller: Controller, unready_node: SimulatedNode
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "stuck"))

    async def explained() -> bool:
        status = await job_status(client, MPIJOBS, namespace, "stuck")
        messages = " ".join(c.get("message", "") for c in status.get("conditions") or ())
        return status.get("phase") == "Pending" and "ready" in messages.lower()

    await eventually(explained)
    await resync(controller, Request(namespace, "stuck"))
    assert "stuck-launcher" not in await live_pods(client, namespace)
    assert (await job_status(client, MPIJOBS, namespace, "stuck"))["phase"] == "Pending"


async def test_deleting_the_job_removes_every_child(
    client: Client,
    namespace: str,
    controller: Controller,
    simulated_node: SimulatedNode,
    control_plane: Any,
) -> None:
    await control_plane.start_controller_manager()
    await create_until_phase(client, MPIJOBS, mpijob(namespace, "gone"), "Running")
    await client.delete(MPIJOBS, "gone", namespace)

    async def all_gone() -> bool:
        for resource in (PODS, SECRETS, CONFIGMAPS, SERVICES):
            items = await client.list(resource, namespace, label_selector="jobcore.dev/job-name")
            if items["items"]:
                return False
        return True

    await eventually(all_gone, timeout=60)
    await wait_for_deletion(client, MPIJOBS, namespace, "gone")


async def test_an_invalid_job_fails_once_and_the_controller_keeps_serving(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(launchers.LAUNCHER, exit_code=0, after=0.2)
    broken = mpijob(namespace, "broken")
    broken["spec"]["worker"]["template"]["spec"]["containers"][0]["name"] = "worker"
    status = await create_until_phase(client, MPIJOBS, broken, "Failed")
    failed = condition(status, "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "spec.worker.template.spec.containers" in failed["message"]
    assert "mpi-worker" in failed["message"]
    await wait_for_events(client, namespace, "broken", "InvalidSpec")
    assert await live_pods(client, namespace) == {}
    before = writes()
    await resync(controller, Request(namespace, "broken"))
    assert writes() == before, "a resync of a job already failed as invalid writes nothing"
    await create_until_phase(client, MPIJOBS, mpijob(namespace, "fine"), "Succeeded")
    status = await job_status(client, MPIJOBS, namespace, "broken")
    assert condition(status, "Failed")["lastTransitionTime"] == failed["lastTransitionTime"]
    # By now any Event the resync emitted in the background has landed: there is none.
    assert await event_counts(client, namespace, "broken") == {"InvalidSpec": 1}


async def test_steady_state_reconciles_write_nothing(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await create_until_phase(client, MPIJOBS, mpijob(namespace, "steady"), "Running")

    async def all_ready() -> bool:  # the last progress to report: launcher and workers
        return bool((await job_status(client, MPIJOBS, namespace, "steady")).get("ready") == "3/3")

    await eventually(all_ready)
    await wait_for_events(client, namespace, "steady", "Running")
    steady = Request(namespace, "steady")
    await wait_until_settled(client, controller, MPIJOBS, steady)
    before = writes()
    for _ in range(10):
        await resync(controller, steady)
    assert writes() == before


async def test_a_controller_restart_while_creating_workers_converges_without_duplicates(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    await install_crd(client, crd_for(KIND))
    await client.create(MPIJOBS, mpijob(namespace, "big", replicas=16))
    first = Manager(client, metrics_address=None, health_address=None)
    add_job_controller(first, KIND, namespace=namespace, max_concurrent_reconciles=1)
    async with background(first.run()):
        await eventually(lambda: _some_pods(client, namespace), timeout=30, interval=0.005)
    before = {
        name: p["metadata"]["uid"] for name, p in (await live_pods(client, namespace)).items()
    }
    second = Manager(client, metrics_address=None, health_address=None)
    add_job_controller(second, KIND, namespace=namespace)
    async with background(second.run()):
        await wait_for_phase(client, MPIJOBS, namespace, "big", "Running")
        after = await live_pods(client, namespace)
    workers = sorted(name for name in after if "-worker-" in name)
    assert workers == sorted(f"big-worker-{i}" for i in range(16))
    for name, uid in before.items():
        assert after[name]["metadata"]["uid"] == uid, f"{name} was recreated"


async def _some_pods(client: Client, namespace: str) -> bool:
    return len(await live_pods(client, namespace)) >= 1


SAMPLE_JOBS = {
    path.stem: yaml.safe_load(path.read_text()) for path in SAMPLES.glob("mpijob-*.yaml")
}


@pytest.mark.parametrize("sample_name", sorted(SAMPLE_JOBS))
async def test_each_sample_is_accepted_and_reconciled(
    client: Client,
    namespace: str,
    controller: Controller,
    simulated_node: SimulatedNode,
    sample_name: str,
) -> None:
    job = copy.deepcopy(SAMPLE_JOBS[sample_name])
    job["metadata"]["namespace"] = namespace
    if job["spec"].get("scheduler"):
        await install_crd(client, schemaless_crd(T9kScheduler.resource))
    await client.create(MPIJOBS, job)
    name = job["metadata"]["name"]

    async def initialized() -> bool:
        status = await job_status(client, MPIJOBS, namespace, name)
        return any(
            c["type"] == "Initialized" and c["status"] == "True"
            for c in status.get("conditions") or ()
        )

    await eventually(initialized)
    spec = KIND.spec_model.model_validate(job["spec"])  # either T9k shape
    replicas = 0 if spec.run_mode and spec.run_mode.paused else spec.worker.replicas
    workers = [n for n in await live_pods(client, namespace) if "-worker-" in n]
    assert len(workers) == replicas


async def test_scaling_workers_updates_the_hostfile_and_the_pods(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await create_until_phase(client, MPIJOBS, mpijob(namespace, "scale"), "Running")
    await client.patch(MPIJOBS, "scale", {"spec": {"worker": {"replicas": 3}}}, namespace)

    async def scaled() -> bool:
        hostfile = (await client.get(CONFIGMAPS, "scale-hostfile", namespace))["data"]["hostfile"]
        return "scale-worker-2" in hostfile and "scale-worker-2" in await live_pods(
            client, namespace
        )

    await eventually(scaled)
    await client.patch(MPIJOBS, "scale", {"spec": {"worker": {"replicas": 1}}}, namespace)

    async def shrunk() -> bool:
        hostfile = (await client.get(CONFIGMAPS, "scale-hostfile", namespace))["data"]["hostfile"]
        workers = {n for n in await live_pods(client, namespace) if "-worker-" in n}
        return hostfile.count("slots=") == 1 and workers == {"scale-worker-0"}

    await eventually(shrunk)
