"""HorovodJob end to end: the real controller, a real API server, the simulated node."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobcore import CONFIGMAPS
from jobcore import Client
from jobcore import Controller
from jobcore import Object
from jobcore.jobs import RetryBackoff
from jobcore.testing import SimulatedNode
from jobcore.testing import condition
from jobcore.testing import create_until_phase
from jobcore.testing import events_of
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobcore.testing import live_pods
from tests.support.fixtures import controller_fixture
from tests.support.kindjobs import HOROVODJOB
from tests.support.kindjobs import later
from tests.support.kindjobs import retried
from tests.support.kindjobs import seconds_between

pytestmark = pytest.mark.integration

KIND = HOROVODJOB.kind
HOROVODJOBS = HOROVODJOB.resource
SAMPLES = Path(__file__).resolve().parents[3] / "manifests" / "samples"


def elastic(namespace: str, name: str, replicas: int = 2) -> Object:
    bounds = {"minReplicas": 1, "maxReplicas": 4}
    return HOROVODJOB.job(namespace, name, replicas=replicas, elastic=bounds)


# A lost elastic worker is replaced after 1 s.
controller = controller_fixture(KIND, retry_backoff=RetryBackoff(1))


async def discovered(client: Client, namespace: str, name: str) -> list[str]:
    """The hosts the job's discovery script probes (its `probe 'host' &` lines)."""
    data = (await client.get(CONFIGMAPS, f"{name}-discovery", namespace))["data"]
    lines = data["discover_hosts.sh"].splitlines()
    return [line.split("'")[1] for line in lines if line.startswith("probe '")]


def hosts(name: str, namespace: str, *indices: int) -> list[str]:
    return [f"{name}-worker-{i}.{name}.{namespace}.svc.cluster.local" for i in indices]


async def running_message(client: Client, namespace: str, name: str) -> str:
    status = await job_status(client, HOROVODJOBS, namespace, name)
    return str(condition(status, "Running")["message"]) if status else ""


# Static -----------------------------------------------------------------------------------


async def test_a_static_jobs_launcher_runs_horovodrun_over_the_hostfile(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await create_until_phase(client, HOROVODJOBS, HOROVODJOB.job(namespace, "ok"), "Running")
    launcher = (await live_pods(client, namespace))["ok-launcher"]
    command = launcher["spec"]["containers"][0]["command"]
    args = ["-np", "4", "--hostfile", "/etc/horovod/hostfile", "--gloo", "python", "train.py"]
    assert command[4:] == args


async def test_an_invalid_job_fails_with_the_field_named(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    job = elastic(namespace, "broken", replicas=5)
    job["spec"]["horovod"] = {"backend": "mpi"}
    status = await create_until_phase(client, HOROVODJOBS, job, "Failed", timeout=20)
    failed = condition(status, "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "spec.horovod.backend" in failed["message"]
    assert "spec.worker.replicas: must be within spec.elastic [1, 4], got 5" in failed["message"]
    assert await live_pods(client, namespace) == {}


# Elastic ----------------------------------------------------------------------------------


async def test_an_elastic_job_scales_up_and_down_while_running(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await create_until_phase(client, HOROVODJOBS, elastic(namespace, "el"), "Running", timeout=20)
    launcher = (await live_pods(client, namespace))["el-launcher"]
    assert launcher["spec"]["containers"][0]["command"][3:11] == [
        "jobcore-horovod-launcher",
        "-np",
        "4",
        "--min-np",
        "2",
        "--max-np",
        "8",
        "--slots-per-host",
    ]

    assert await discovered(client, namespace, "el") == hosts("el", namespace, 0, 1, 2, 3)

    async def shows(*indices: int) -> bool:
        workers = {n for n in await live_pods(client, namespace) if "-worker-" in n}
        ready = f"{len(indices)} of {len(indices)} worker(s) Ready for horovodrun to use."
        return workers == {f"el-worker-{i}" for i in indices} and (
            await running_message(client, namespace, "el") == ready
        )

    await eventually(lambda: shows(0, 1))
    await client.patch(HOROVODJOBS, "el", {"spec": {"worker": {"replicas": 3}}}, namespace)
    await eventually(lambda: shows(0, 1, 2))
    await client.patch(HOROVODJOBS, "el", {"spec": {"worker": {"replicas": 1}}}, namespace)
    await eventually(lambda: shows(0))

    async def settled() -> bool:
        status = await job_status(client, HOROVODJOBS, namespace, "el")
        return bool(status["phase"] == "Running" and status["ready"] == "2/2")

    await eventually(settled)
    assert (
        launcher["metadata"]["uid"]
        == (await live_pods(client, namespace))["el-launcher"]["metadata"]["uid"]
    )
    scaling: list[tuple[str, str]] = []

    async def scaled_three_times() -> bool:
        scaling[:] = [e for e in await events_of(client, namespace, "el") if e[0][:3] == "Pod"]
        return len(scaling) >= 3

    await eventually(scaled_three_times, timeout=10, interval=0.1)
    assert scaling[0] == ("PodCreated", "Created pod el-worker-2"), scaling
    assert sorted(scaling[1:]) == [
        ("PodDeleted", "Deleted pod el-worker-1"),
        ("PodDeleted", "Deleted pod el-worker-2"),
    ], scaling


async def test_an_elastic_jobs_lost_worker_is_replaced_while_it_runs(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    await create_until_phase(
        client, HOROVODJOBS, elastic(namespace, "heal", replicas=3), "Running", timeout=20
    )

    async def all_listed() -> bool:
        message = await running_message(client, namespace, "heal")
        return message == "3 of 3 worker(s) Ready for horovodrun to use."

    await eventually(all_listed)
    lost = (await live_pods(client, namespace))["heal-worker-1"]["metadata"]["uid"]
    await simulated_node.fail(namespace, "heal-worker-1", exit_code=137)

    async def replaced() -> bool:
        pod = (await live_pods(client, namespace)).get("heal-worker-1")
        return pod is not None and pod["metadata"]["uid"] != lost

    await eventually(replaced)
    await eventually(all_listed)
    status = await job_status(client, HOROVODJOBS, namespace, "heal")
    assert status["phase"] == "Running"
    assert not any(c["type"] == "Failed" and c["status"] == "True" for c in status["conditions"])
    assert (await live_pods(client, namespace))["heal-launcher"]["status"]["phase"] == "Running"


async def test_an_elastic_jobs_failing_worker_is_replaced_after_a_doubling_backoff(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    backoff = RetryBackoff(initial=3, maximum=60)
    async with job_controller(client, KIND, namespace=namespace, retry_backoff=backoff):
        job = elastic(namespace, "crashy", replicas=3)
        await create_until_phase(client, HOROVODJOBS, job, "Running", timeout=20)
        times, waited = [], []
        for delay in (3, 6):  # the worker fails again at once: twice the delay
            lost = await running_worker(client, namespace, "crashy-worker-1")
            await simulated_node.fail(namespace, "crashy-worker-1", exit_code=137)
            status = await retried(client, HOROVODJOBS, namespace, "crashy", delay)
            back = later(status["lastRetryTime"], delay)
            times.append(back)
            note = f"Ended pods are created again in {delay} s, at {back} (retry backoff)."
            assert condition(status, "Running")["message"].endswith(note)
            assert status["phase"] == "Running"
            new = await running_worker(client, namespace, "crashy-worker-1", other_than=lost)
            assert new["metadata"]["creationTimestamp"] >= back, "replaced before the delay"
            waited.append(
                seconds_between(status["lastRetryTime"], new["metadata"]["creationTimestamp"])
            )
        warnings = [m for r, m in await events_of(client, namespace, "crashy") if r == "Replacing"]
    print(f"a worker failing at once, twice (delays 3 s, 6 s): replaced after {waited} s")
    assert warnings == [
        f"Replacing ended pod(s) crashy-worker-1: created again in {delay} s, at {when}."
        for delay, when in zip((3, 6), times, strict=True)
    ]


async def running_worker(
    client: Client, namespace: str, name: str, *, other_than: Object | None = None
) -> Object:
    """The pod `name` once it runs (a new one, if `other_than` is given)."""
    found: list[Object] = []

    async def runs() -> bool:
        pod = (await live_pods(client, namespace)).get(name)
        found[:] = [pod] if pod else []
        return bool(
            pod
            and (pod.get("status") or {}).get("phase") == "Running"
            and (other_than is None or pod["metadata"]["uid"] != other_than["metadata"]["uid"])
        )

    await eventually(runs, timeout=30, interval=0.1)
    return found[0]


async def test_each_sample_is_accepted_and_runs(
    client: Client, namespace: str, controller: Controller, simulated_node: SimulatedNode
) -> None:
    for path in sorted(SAMPLES.glob("horovodjob-*.yaml")):
        job = yaml.safe_load(path.read_text())
        job["metadata"]["namespace"] = namespace
        await create_until_phase(client, HOROVODJOBS, job, "Running", timeout=20)
