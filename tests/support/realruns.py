"""Running a job for real to its end, on a ProcessNode or in the real cluster, for the real-tier
tests of every kind."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Protocol

from controllers.sandbox.realjobs import COLOSSALAIJOBS
from controllers.sandbox.realjobs import HOROVODJOBS
from controllers.sandbox.realjobs import colossalai_job
from jobcore import PODS
from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.launcher import Transport
from jobcore.testing import condition
from jobcore.testing import events_of
from jobcore.testing import eventually
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import wait_for_end
from jobcore.testing import wait_for_events
from jobcore.testing import wait_for_phase


class Logs(Protocol):
    """Where a container's output is read: a ProcessNode (KeyError before the container ran),
    or the real cluster's kubelet."""

    def logs(self, namespace: str, pod: str, container: str) -> str: ...


def launcher_log(node: Logs, namespace: str, job: str, container: str = "launcher") -> str:
    """The output of the launcher pod `JOB-launcher`, empty before it ran."""
    try:
        return node.logs(namespace, f"{job}-launcher", container)
    except KeyError:
        return ""


async def run_to_end(
    client: Client,
    node: Logs,
    resource: Resource,
    job: Object,
    *,
    container: str,
    timeout: float = 90,
) -> tuple[dict[str, Any], str]:
    """Create `job`; once it ended, its status and its launcher's output (`container`'s).

    A job that does not end in `timeout` fails the test, showing the launcher's output.
    """
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    await client.create(resource, job)

    def log() -> str:
        return launcher_log(node, namespace, name, container)

    status: dict[str, Any] = await wait_for_end(
        client, resource, namespace, name, timeout=timeout, explain=log
    )
    return status, log()


# ColossalAI: a job that succeeds beside one that fails -----------------------------------

Ended = tuple[dict[str, Any], str]
"""A job's end status and its launcher's output, as `run_to_end` returns them."""


async def colossalai_pair(
    client: Client, node: Logs, folder: Path, *, name: str, namespace: str, transport: Transport
) -> tuple[Ended, Ended]:
    """`colossalai_job` `name` (2 workers of 2 ranks) and `{name}fail` (2 workers of 1 rank,
    rank 1 exiting 3), each in its own folder below `folder`, launched over `transport` (with
    the agent, given no ssh settings at all), run to their end at once to save the suite's
    time."""
    jobs = []
    for job_name, procs, failing in ((name, 2, None), (f"{name}fail", 1, 1)):
        (folder / job_name).mkdir()
        job = colossalai_job(
            folder / job_name, name=job_name, namespace=namespace, procs=procs, failing_rank=failing
        )
        if transport == "agent":
            job["spec"]["transport"] = "agent"
            del job["spec"]["ssh"]
        jobs.append(job)
    ok, failed = await asyncio.gather(
        *(
            run_to_end(client, node, COLOSSALAIJOBS, job, container="launcher", timeout=150)
            for job in jobs
        )
    )
    return ok, failed


# An elastic HorovodJob -------------------------------------------------------------------

ELASTIC = {"minReplicas": 1, "maxReplicas": 3}


def elastic_horovod_job(job: Object) -> Object:
    """A `realjobs.horovod_job` made elastic between 1 and 3 workers of 1 slot, the others
    stalling 10 s on a lost worker (Gloo's timeout) before the reset."""
    spec = job["spec"]
    spec["elastic"] = ELASTIC
    spec["horovod"] = {"glooTimeoutSeconds": 10}
    spec["worker"]["slotsPerWorker"] = 1
    return job


@dataclass(frozen=True)
class ElasticRun:
    """An elastic job scaled 2 -> 3 -> 2 workers, worker-1 deleted and replaced, then stopped:
    its end status, the launcher's output, and the worker pods it lost on the way."""

    status: dict[str, Any]
    log: str
    removed: Object
    """worker-2, removed by the scale-down."""
    lost: Object
    """The first worker-1, deleted."""


async def scale_up_down_and_replace(
    client: Client,
    node: Logs,
    job: Object,
    stop: Callable[[], Awaitable[None]],
) -> ElasticRun:
    """Create `job` (running `realjobs.horovod_elastic`) and, while it trains, scale it up to 3
    workers and down to 2, delete worker-1 and see the job train on its replacement, then
    `stop` the training; what the user sees is checked on the way: each world size in rank 0's
    output, the job's status and its Events."""
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    await client.create(HOROVODJOBS, job)

    def log() -> str:
        return launcher_log(node, namespace, name)

    def sizes() -> list[int]:
        """The world size at each training step, as rank 0 printed it."""
        return [int(size) for size in re.findall(r"<stdout>:step \d+ size=(\d+)", log())]

    async def trains_on(size: int, after: int = 0) -> None:
        await eventually(lambda: size in sizes()[after:], timeout=60, interval=0.3)

    async def ready_message() -> str:
        status = await job_status(client, HOROVODJOBS, namespace, name)
        return str(condition(status, "Running")["message"]) if status else ""

    async def scale(replicas: int) -> None:
        patch = {"spec": {"worker": {"replicas": replicas}}}
        await client.patch(HOROVODJOBS, name, patch, namespace)

    try:
        await trains_on(2)
        scaled = len(sizes())
        await scale(3)
        await trains_on(3, after=scaled)
        three = "3 of 3 worker(s) Ready for horovodrun to use."
        await eventually(lambda: _equal(ready_message(), three), timeout=20, interval=0.2)
        pods = await live_pods(client, namespace)
        scaled = len(sizes())
        await scale(2)
        await trains_on(2, after=scaled)

        lost = pods[f"{name}-worker-1"]
        scaled = len(sizes())
        await client.delete(PODS, f"{name}-worker-1", namespace, grace_period_seconds=1)
        await trains_on(1, after=scaled)  # on worker-0 alone, until the new worker-1 joins
        await trains_on(2, after=scaled + sizes()[scaled:].index(1))
        replaced = (await live_pods(client, namespace))[f"{name}-worker-1"]
        assert replaced["metadata"]["uid"] != lost["metadata"]["uid"]

        await stop()
        status = await wait_for_phase(client, HOROVODJOBS, namespace, name, "Succeeded", timeout=60)
    except BaseException as exc:  # what horovodrun said explains most failures
        exc.add_note(log())
        raise
    output = log()
    steps = sizes()
    assert steps[0] == 2 and 3 in steps and steps[-1] == 2, output
    assert re.search(r"<stdout>:done after \d+ steps on 2 ranks", output), output
    assert condition(status, "Completed")["message"] == "The job has finished successfully."
    assert condition(status, "ReplicaFailure")["status"] == "False"
    workers = {s["name"]: s for t in status["tasks"] if t["type"] == "worker" for s in t["status"]}
    assert workers[f"{name}-worker-1"]["uid"] == replaced["metadata"]["uid"]
    assert workers[f"{name}-worker-1"]["phase"] == "Running"
    # The Events tell the story: scaled up, scaled down, a lost worker replaced, done.
    kind = HOROVODJOBS.kind  # not its Service's, which Kubernetes' controllers may report on
    await wait_for_events(client, namespace, name, "Succeeded", kind=kind)
    events = await events_of(client, namespace, name, kind=kind)
    assert [reason for reason, _ in events] == [
        "Initialized",
        "Running",
        "PodCreated",
        "PodDeleted",
        "PodCreated",
        "Succeeded",
    ], events
    assert [message for reason, message in events if reason.startswith("Pod")] == [
        f"Created pod {name}-worker-2",
        f"Deleted pod {name}-worker-2",
        f"Created pod {name}-worker-1",
    ], events
    return ElasticRun(status, output, pods[f"{name}-worker-2"], lost)


async def _equal(value: Awaitable[str], expected: str) -> bool:
    return await value == expected
