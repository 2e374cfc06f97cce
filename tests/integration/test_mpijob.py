"""MPIJob end to end: the real controller, a real API server, the simulated node."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobcore import (
    CONFIGMAPS,
    PODS,
    REGISTRY,
    REPLICA_TYPE_LABEL,
    SECRETS,
    SERVICES,
    Client,
    Controller,
    Manager,
    NotFoundError,
    Object,
    Request,
    T9kScheduler,
    add_job_controller,
    crd_for,
)
from jobcore.testing import (
    SimulatedNode,
    api_requests,
    background,
    condition,
    eventually,
    install_crd,
    job_controller,
    job_status,
    live_pods,
    schemaless_crd,
    wait_for_events,
    wait_for_phase,
)
from jobkinds.mpijob import MPIJobKind
from tests import mpijobs

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
MPIJOBS = KIND.resource
SAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "samples"
LAUNCHER = f"{REPLICA_TYPE_LABEL}=launcher"


def mpijob(namespace: str, name: str, *, replicas: int = 2, **spec: Any) -> Object:
    """The plain MPIJob of tests.mpijobs, with the mpirun options these tests see rendered."""
    options = {"mca": {"btl": "^openib"}, "mpiHome": "/usr/local", **spec}
    job = mpijobs.mpijob(namespace, name, replicas=replicas, **options)
    job["spec"]["worker"].update(extraMPIArgs=["-N", "2"], cmd=["./allreduce"])
    return job


@pytest.fixture
async def controller(client: Client, namespace: str) -> AsyncIterator[Controller]:
    """The MPIJob controller, scoped to the test's namespace."""
    async with job_controller(client, KIND, namespace=namespace) as controller:
        yield controller


def sample(name: str) -> float:
    value = REGISTRY.get_sample_value(name, {"kind": "MPIJob", "namespace": "_"})
    return value or 0.0


async def test_a_job_runs_workers_then_the_launcher_and_succeeds(
    client: Client, namespace: str, controller: Controller
) -> None:
    node = SimulatedNode(client, name=f"n-{namespace}"[:63], namespace=namespace, ready_after=1.0)
    node.when(LAUNCHER, exit_code=0, after=0.3)
    async with background(node.run()):
        await client.create(MPIJOBS, mpijob(namespace, "ok"))

        async def workers_running() -> bool:
            current = await live_pods(client, namespace)
            return all(
                current.get(f"ok-worker-{i}", {}).get("status", {}).get("phase") == "Running"
                for i in range(2)
            )

        await eventually(workers_running)
        assert "ok-launcher" not in await live_pods(client, namespace), "launcher waits for Ready"
        status = await wait_for_phase(client, MPIJOBS, namespace, "ok", "Succeeded")

    assert condition(status, "Completed")["status"] == "True"
    assert condition(status, "Completed")["message"] == "The job has finished successfully."
    assert condition(status, "Initialized")["status"] == "True"
    assert [task["type"] for task in status["tasks"]] == ["launcher", "worker"]
    assert status["tasks"][0]["status"][0]["phase"] == "Succeeded"
    job = await client.get(MPIJOBS, "ok", namespace)
    owner = job["metadata"]["uid"]
    for resource, name in (
        (SECRETS, "ok-ssh"),
        (CONFIGMAPS, "ok-hostfile"),
        (SERVICES, "ok"),
        (PODS, "ok-worker-0"),
        (PODS, "ok-launcher"),
    ):
        child = await client.get(resource, name, namespace)
        (ref,) = child["metadata"]["ownerReferences"]
        assert ref["uid"] == owner and ref["controller"] is True, name
    worker = await client.get(PODS, "ok-worker-0", namespace)
    assert worker["spec"]["hostname"] == "ok-worker-0"
    assert worker["spec"]["subdomain"] == "ok"
    hostfile = (await client.get(CONFIGMAPS, "ok-hostfile", namespace))["data"]["hostfile"]
    assert f"ok-worker-0.ok.{namespace}.svc slots=2" in hostfile
    await wait_for_events(client, namespace, "ok", "Initialized", "Succeeded")


async def test_launcher_failure_fails_the_job_naming_the_pod_and_exit_code(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(LAUNCHER, exit_code=3, after=0.2)
    await client.create(MPIJOBS, mpijob(namespace, "bad"))
    status = await wait_for_phase(client, MPIJOBS, namespace, "bad", "Failed")
    assert condition(status, "Failed")["status"] == "True"
    failure = condition(status, "ReplicaFailure")
    assert failure["status"] == "True"
    assert "bad-launcher" in failure["message"] and "3" in failure["message"]
    await wait_for_events(client, namespace, "bad", "Failed")


async def test_a_worker_that_never_becomes_ready_holds_the_launcher_back(
    client: Client, namespace: str, controller: Controller
) -> None:
    node = SimulatedNode(client, name=f"n-{namespace}"[:63], namespace=namespace, ready_after=3600)
    async with background(node.run()):
        await client.create(MPIJOBS, mpijob(namespace, "stuck"))

        async def explained() -> bool:
            status = await job_status(client, MPIJOBS, namespace, "stuck")
            messages = " ".join(c.get("message", "") for c in status.get("conditions") or ())
            return status.get("phase") == "Pending" and "ready" in messages.lower()

        await eventually(explained)
        await asyncio.sleep(1.0)
        assert "stuck-launcher" not in await live_pods(client, namespace)
        assert (await job_status(client, MPIJOBS, namespace, "stuck"))["phase"] == "Pending"


async def test_a_worker_killed_while_running_fails_the_job(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "killed"))
    await wait_for_phase(client, MPIJOBS, namespace, "killed", "Running")
    await simulated_node.fail(namespace, "killed-worker-1", exit_code=137, reason="OOMKilled")
    status = await wait_for_phase(client, MPIJOBS, namespace, "killed", "Failed")
    failure = condition(status, "ReplicaFailure")
    assert failure["status"] == "True" and "killed-worker-1" in failure["message"]


async def test_clean_up_workers_deletes_workers_and_keeps_the_launcher(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(LAUNCHER, exit_code=0, after=0.2)
    await client.create(MPIJOBS, mpijob(namespace, "tidy", runPolicy={"cleanUpWorkers": True}))
    await wait_for_phase(client, MPIJOBS, namespace, "tidy", "Succeeded")

    async def workers_gone() -> bool:
        return set(await live_pods(client, namespace)) == {"tidy-launcher"}

    await eventually(workers_gone)

    async def reported() -> bool:
        status = await job_status(client, MPIJOBS, namespace, "tidy")
        return bool(status["aggregate"]["deleted"] == 2)

    await eventually(reported)
    assert (await job_status(client, MPIJOBS, namespace, "tidy"))["phase"] == "Succeeded"


async def test_deleting_the_job_removes_every_child(
    client: Client,
    namespace: str,
    controller: Controller,
    simulated_node: SimulatedNode,
    control_plane: Any,
) -> None:
    await control_plane.start_controller_manager()
    await client.create(MPIJOBS, mpijob(namespace, "gone"))
    await wait_for_phase(client, MPIJOBS, namespace, "gone", "Running")
    await client.delete(MPIJOBS, "gone", namespace)

    async def all_gone() -> bool:
        for resource in (PODS, SECRETS, CONFIGMAPS, SERVICES):
            items = await client.list(resource, namespace, label_selector="jobcore.dev/job-name")
            if items["items"]:
                return False
        return True

    await eventually(all_gone, timeout=60)
    with pytest.raises(NotFoundError):
        await client.get(MPIJOBS, "gone", namespace)


async def test_an_invalid_job_fails_once_and_the_controller_keeps_serving(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(LAUNCHER, exit_code=0, after=0.2)
    broken = mpijob(namespace, "broken")
    broken["spec"]["worker"]["template"]["spec"]["containers"][0]["name"] = "worker"
    await client.create(MPIJOBS, broken)
    status = await wait_for_phase(client, MPIJOBS, namespace, "broken", "Failed")
    failed = condition(status, "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "spec.worker.template.spec.containers" in failed["message"]
    assert "mpi-worker" in failed["message"]
    await wait_for_events(client, namespace, "broken", "InvalidSpec")
    assert await live_pods(client, namespace) == {}
    writes = api_requests("PATCH") + api_requests("POST")
    controller.queue.add(Request(namespace, "broken"))
    await client.create(MPIJOBS, mpijob(namespace, "fine"))
    await wait_for_phase(client, MPIJOBS, namespace, "fine", "Succeeded")
    status = await job_status(client, MPIJOBS, namespace, "broken")
    assert condition(status, "Failed")["lastTransitionTime"] == failed["lastTransitionTime"]
    assert api_requests("PATCH") + api_requests("POST") > writes  # the valid job wrote


async def test_steady_state_reconciles_write_nothing(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "steady"))
    await wait_for_phase(client, MPIJOBS, namespace, "steady", "Running")
    await asyncio.sleep(0.5)
    writes = sum(api_requests(method) for method in ("POST", "PUT", "PATCH", "DELETE"))
    for _ in range(10):
        controller.queue.add(Request(namespace, "steady"))
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    assert sum(api_requests(m) for m in ("POST", "PUT", "PATCH", "DELETE")) == writes


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
    await client.create(MPIJOBS, mpijob(namespace, "scale"))
    await wait_for_phase(client, MPIJOBS, namespace, "scale", "Running")
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
