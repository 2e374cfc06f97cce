"""Retries back off: a job that keeps failing does not churn its pods.

The real controller against a real API server, the simulated node playing the pods. A restart
under `backoffLimit` recreates the pods only after the retry's delay, which doubles with each
restart in a row; the status and a Warning say when, and a controller started afresh keeps to
the delay its predecessor recorded. (An elastic HorovodJob's replaced worker: see
test_horovodjob.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

from jobcore import Client
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
from jobkinds.mpijob import MPIJobKind
from tests.support.kindjobs import later
from tests.support.kindjobs import seconds_between
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

KIND = MPIJobKind()
BACKOFF = RetryBackoff(initial=4, maximum=60)
"""Long enough for a controller to start again within the first delay."""
POLICY = {"backoffLimit": 3, "restartPolicy": "OnFailure"}
PODS = {"crashy-launcher", "crashy-worker-0", "crashy-worker-1"}


async def restarted(client: Client, namespace: str, times: int) -> Any:
    """The job's status once it counts `times` restarts."""

    async def counted() -> bool:
        status = await job_status(client, MPIJOBS, namespace, "crashy")
        return bool(status.get("restarts") == times)

    await eventually(counted, timeout=30, interval=0.05)
    return await job_status(client, MPIJOBS, namespace, "crashy")


async def running_again(
    client: Client, namespace: str, before: dict[str, str]
) -> dict[str, Object]:
    """The job's pods once all are new (none of the uids `before`) and Running."""
    pods: dict[str, Object] = {}

    async def back() -> bool:
        pods.clear()
        pods.update(await live_pods(client, namespace))
        return set(pods) == PODS and all(
            pod["metadata"]["uid"] not in before.values()
            and (pod.get("status") or {}).get("phase") == "Running"
            for pod in pods.values()
        )

    await eventually(back, timeout=30, interval=0.1)
    return pods


def uids(pods: dict[str, Object]) -> dict[str, str]:
    return {name: pod["metadata"]["uid"] for name, pod in pods.items()}


def first_created(pods: dict[str, Object]) -> str:
    return str(min(pod["metadata"]["creationTimestamp"] for pod in pods.values()))


async def test_restarts_wait_a_doubling_delay_said_in_the_status_even_across_controllers(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    job = mpijob(namespace, "crashy", runPolicy=POLICY)
    async with job_controller(client, KIND, namespace=namespace, retry_backoff=BACKOFF):
        await create_until_phase(client, MPIJOBS, job, "Running", timeout=20)
        before = uids(await running_again(client, namespace, {}))
        await simulated_node.fail(namespace, "crashy-worker-0", exit_code=137)
        first = await restarted(client, namespace, 1)
    # The controller that recorded the restart is gone: another one keeps to its delay.
    assert first["retryDelaySeconds"] == 4
    back = later(first["lastRetryTime"], 4)
    assert condition(first, "Running")["message"] == (
        f"Restart 1 of 3 in 4 s, at {back}: recreating every pod after a failure: "
        "Pod[crashy-worker-0] exited with error code 137 (container mpi-worker)"
    )
    async with job_controller(client, KIND, namespace=namespace, retry_backoff=BACKOFF):
        pods = await running_again(client, namespace, before)
        assert first_created(pods) >= back, "pods recreated before the backoff delay"
        waited = [seconds_between(first["lastRetryTime"], first_created(pods))]
        await simulated_node.fail(namespace, "crashy-worker-1", exit_code=137)
        second = await restarted(client, namespace, 2)
        # Failed again at once: the next delay is twice as long.
        assert second["retryDelaySeconds"] == 8
        back = later(second["lastRetryTime"], 8)
        assert condition(second, "Running")["message"].startswith(
            f"Restart 2 of 3 in 8 s, at {back}: recreating every pod after a failure"
        )
        pods = await running_again(client, namespace, uids(pods))
        assert first_created(pods) >= back, "pods recreated before the backoff delay"
        waited.append(seconds_between(second["lastRetryTime"], first_created(pods)))
        warnings = [m for r, m in await events_of(client, namespace, "crashy") if r == "Restarting"]
    print(f"restarts with delays 4 s (across controllers) and 8 s: pods back after {waited} s")
    assert [message[: len("Restart 1 of 3 in 4 s")] for message in warnings] == [
        "Restart 1 of 3 in 4 s",
        "Restart 2 of 3 in 8 s",
    ]
