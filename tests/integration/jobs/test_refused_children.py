"""Children the API server refuses: the user sees why at once, and nothing leaks.

A ResourceQuota or LimitRange turning a Pod down (403) is said within one reconcile, in a
Warning Event and in the job's conditions, and retried until the cluster admits the Pod; a job
that becomes invalid while it runs has its pods cleaned up as its run policy says. The real
controller against the real API server and its real admission plugins; the simulated node
plays the pods.
"""

from __future__ import annotations

import time

import pytest

from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import SimulatedNode
from jobcore.testing import condition
from jobcore.testing import events_of
from jobcore.testing import eventually
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import wait_for_end
from jobcore.testing import wait_for_events
from jobkinds.mpijob import MPIJobKind
from tests.support.fixtures import controller_fixture
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

QUOTAS = Resource("", "v1", "ResourceQuota", "resourcequotas")
LIMIT_RANGES = Resource("", "v1", "LimitRange", "limitranges")


controller = controller_fixture(MPIJobKind())


async def set_quota(
    client: Client, namespace: str, resource: str, count: int, *, create: bool = False
) -> None:
    """A quota named `resource` of `count` of it ("pods", "secrets"). The quota's status is set
    here, as kube-controller-manager would: its admission plugin refuses every such object
    while the status is unknown."""
    hard = {resource: str(count)}
    if create:
        quota: Object = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": resource, "namespace": namespace},
            "spec": {"hard": hard},
        }
        await client.create(QUOTAS, quota)
        status = {"hard": hard, "used": {resource: "0"}}
    else:
        await client.patch(QUOTAS, resource, {"spec": {"hard": hard}}, namespace)
        status = {"hard": hard}
    await client.patch(QUOTAS, resource, {"status": status}, namespace, subresource="status")


async def test_a_quota_that_admits_two_of_four_workers_says_why_then_the_job_runs(
    client: Client, namespace: str, simulated_node: SimulatedNode, controller: None
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.2)
    await set_quota(client, namespace, "pods", 2, create=True)
    await client.create(MPIJOBS, mpijob(namespace, "quota", replicas=4))
    created = time.monotonic()

    async def refused() -> bool:
        status = await job_status(client, MPIJOBS, namespace, "quota")
        return any(c["reason"] == "FailedCreate" for c in status.get("conditions") or ())

    await eventually(refused, timeout=10, interval=0.05)
    shown = time.monotonic() - created
    print(f"quota refusal visible in the job's status {shown:.2f} s after the job was created")
    status = await job_status(client, MPIJOBS, namespace, "quota")
    assert status["phase"] == "Pending"
    initialized = condition(status, "Initialized")
    assert (initialized["status"], initialized["reason"]) == ("False", "FailedCreate")
    message = initialized["message"]
    assert message.startswith("The API server refused Pod quota-worker-"), message
    assert "exceeded quota: pods" in message and "1 more refused likewise" in message, message
    assert condition(status, "Running")["reason"] == "FailedCreate"
    await wait_for_events(client, namespace, "quota", "FailedCreate")
    warning = next(m for r, m in await events_of(client, namespace, "quota") if r == "FailedCreate")
    assert warning.startswith("Error creating Pod quota-worker-") and "exceeded quota" in warning
    assert len(await live_pods(client, namespace)) == 2

    await set_quota(client, namespace, "pods", 5)
    status = await wait_for_end(client, MPIJOBS, namespace, "quota", timeout=60)
    assert status["phase"] == "Succeeded"
    initialized = condition(status, "Initialized")
    assert (initialized["status"], initialized["reason"]) == ("True", "Initialized")


async def test_a_limit_range_refusal_is_shown_and_retried(
    client: Client, namespace: str, simulated_node: SimulatedNode, controller: None
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.2)
    limits: Object = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "small", "namespace": namespace},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]},
    }
    await client.create(LIMIT_RANGES, limits)
    job = mpijob(namespace, "greedy")
    container = job["spec"]["worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": "2"}}
    await client.create(MPIJOBS, job)

    async def refused() -> bool:
        status = await job_status(client, MPIJOBS, namespace, "greedy")
        return any(c["reason"] == "FailedCreate" for c in status.get("conditions") or ())

    await eventually(refused, timeout=10, interval=0.1)
    status = await job_status(client, MPIJOBS, namespace, "greedy")
    message = condition(status, "Initialized")["message"]
    assert "maximum cpu usage per Container is 1" in message, message
    assert status["phase"] == "Pending"  # not Failed: the LimitRange may change
    await client.delete(LIMIT_RANGES, "small", namespace)
    status = await wait_for_end(client, MPIJOBS, namespace, "greedy", timeout=60)
    assert status["phase"] == "Succeeded"


async def test_a_job_that_becomes_invalid_while_it_runs_has_its_pods_cleaned_up(
    client: Client, namespace: str, simulated_node: SimulatedNode, controller: None
) -> None:
    # The launcher never ends: the workers would keep serving sshd for ever.
    job = mpijob(namespace, "turned", runPolicy={"cleanUpPolicy": "All"})
    await client.create(MPIJOBS, job)

    async def running() -> bool:
        return bool(
            (await job_status(client, MPIJOBS, namespace, "turned")).get("phase") == "Running"
        )

    await eventually(running, timeout=20)
    assert len(await live_pods(client, namespace)) == 3
    relative = {"spec": {"ssh": {"sshAuthMountPath": "relative/.ssh"}}}
    await client.patch(MPIJOBS, "turned", relative, namespace)

    async def cleaned() -> bool:
        return not await live_pods(client, namespace)

    await eventually(cleaned, timeout=20)
    status = await job_status(client, MPIJOBS, namespace, "turned")
    failed = condition(status, "Failed")
    assert (status["phase"], failed["reason"]) == ("Failed", "InvalidSpec")
    assert "spec.ssh.sshAuthMountPath" in failed["message"]
