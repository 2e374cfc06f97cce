"""The runs every launcher kind (MPIJob, ColossalAIJob, HorovodJob) is tested through.

Each runs a job on the simulated node and leaves the kind's own assertions to the test.
"""

from __future__ import annotations

from typing import Any

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import condition
from jobcore.testing import controller_uids
from jobcore.testing import create_until_phase
from jobcore.testing import created_after_ready
from jobcore.testing import wait_for_events
from jobcore.testing import wait_for_phase
from jobcore.testing import wait_for_pods

LAUNCHER = f"{REPLICA_TYPE_LABEL}=launcher"
TIMEOUT = 20.0


def _identity(job: Object) -> tuple[str, str]:
    return job["metadata"]["namespace"], job["metadata"]["name"]


async def run_after_ready_workers(
    client: Client, resource: Resource, job: Object, *, workers: int
) -> Any:
    """`job` run to Succeeded on its own node, whose pods turn Ready 2 s after they run.

    Fails unless the launcher was created once all `workers` were Ready, and unless the job
    ended as every launcher kind's does: Completed and Initialized, its launcher Succeeded,
    its children (ssh Secret, hostfile, Service, pods) controlled by it, its workers named
    in the Service's DNS, and its Initialized and Succeeded announced as Events.
    """
    namespace, name = _identity(job)
    node = SimulatedNode(client, name=f"n-{namespace}"[:63], namespace=namespace, ready_after=2.0)
    node.when(LAUNCHER, exit_code=0, after=0.3)
    async with background(node.run()):
        status = await create_until_phase(client, resource, job, "Succeeded", timeout=TIMEOUT)
    names = [f"{name}-worker-{i}" for i in range(workers)]
    launcher = f"{name}-launcher"
    assert await created_after_ready(client, namespace, launcher, names), "launcher before Ready"
    completed = condition(status, "Completed")
    assert (completed["status"], completed["message"]) == (
        "True",
        "The job has finished successfully.",
    )
    assert condition(status, "Initialized")["status"] == "True"
    assert [task["type"] for task in status["tasks"]] == ["launcher", "worker"]
    assert status["tasks"][0]["status"][0]["phase"] == "Succeeded"
    owner = (await client.get(resource, name, namespace))["metadata"]["uid"]
    children = [(SECRETS, f"{name}-ssh"), (CONFIGMAPS, f"{name}-hostfile"), (SERVICES, name)]
    children += [(PODS, pod) for pod in (*names, launcher)]
    assert await controller_uids(client, namespace, children) == [owner] * len(children)
    for index, worker in enumerate(names):
        spec = (await client.get(PODS, worker, namespace))["spec"]
        assert (spec["hostname"], spec["subdomain"]) == (f"{name}-worker-{index}", name)
    await wait_for_events(client, namespace, name, "Initialized", "Succeeded")
    return status


async def fail_by_launcher(
    client: Client, node: SimulatedNode, resource: Resource, job: Object, *, exit_code: int
) -> Any:
    """`job`'s status once Failed, its launcher having exited with `exit_code`."""
    name = job["metadata"]["name"]
    node.when(f"{LAUNCHER},{JOB_NAME_LABEL}={name}", exit_code=exit_code, after=0.2)
    return await create_until_phase(client, resource, job, "Failed", timeout=TIMEOUT)


async def fail_by_worker(
    client: Client, node: SimulatedNode, resource: Resource, job: Object, *, worker: str
) -> Any:
    """`job`'s status once Failed, its pod `worker` OOMKilled (137) while the job ran."""
    namespace, name = _identity(job)
    await create_until_phase(client, resource, job, "Running", timeout=TIMEOUT)
    await node.fail(namespace, worker, exit_code=137, reason="OOMKilled")
    return await wait_for_phase(client, resource, namespace, name, "Failed", timeout=TIMEOUT)


async def succeed_cleaning_up_workers(
    client: Client, node: SimulatedNode, resource: Resource, job: Object
) -> None:
    """Run `job`, which sets runPolicy.cleanUpWorkers, to Succeeded; return once its launcher
    is the only pod left."""
    namespace, name = _identity(job)
    assert job["spec"]["runPolicy"]["cleanUpWorkers"] is True
    node.when(f"{LAUNCHER},{JOB_NAME_LABEL}={name}", exit_code=0, after=0.2)
    await create_until_phase(client, resource, job, "Succeeded", timeout=TIMEOUT)
    await wait_for_pods(client, namespace, {f"{name}-launcher"})
