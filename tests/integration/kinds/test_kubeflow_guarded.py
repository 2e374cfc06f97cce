"""Kubeflow's launcher Job is guarded like pods: it runs only once the job's Secret and
ConfigMap are its own and accepted, and an invalid job stops it and cleans up as its own
runPolicy says. The kind's controller, Kubernetes' Job controller and a real API server.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from jobcore import BATCH_JOBS
from jobcore import SECRETS
from jobcore import Client
from jobcore import Informer
from jobcore import Object
from jobcore.testing import eventually
from jobcore.testing import job_status
from tests.integration.jobs.test_refused_children import set_quota
from tests.integration.runtime.test_informer import Recorder
from tests.integration.runtime.test_informer import running
from tests.support.kubeflowjobs import MPIJOBS
from tests.support.kubeflowjobs import condition_of
from tests.support.kubeflowjobs import mpijob
from tests.support.kubeflowjobs import phases
from tests.support.kubeflowjobs import running_launcher
from tests.support.kubeflowjobs import started
from tests.support.kubeflowjobs import wait_for_condition
from tests.support.kubeflowjobs import worker_names

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubeflow", "simulated_node")]


@pytest.fixture
async def batch_jobs(client: Client, namespace: str) -> AsyncIterator[Recorder]:
    """Every batch Job created in the namespace from now on, even one deleted at once."""
    recorder = Recorder()
    informer = Informer(client, BATCH_JOBS, namespace=namespace)
    informer.add_handler(recorder)
    async with running(informer):
        yield recorder


async def test_no_launcher_job_while_a_quota_refuses_the_ssh_secret(
    client: Client, namespace: str, batch_jobs: Recorder
) -> None:
    await set_quota(client, namespace, "secrets", 0, create=True)
    await client.create(MPIJOBS, mpijob(namespace, "quota"))  # AtStartup: the launcher at once

    async def refused() -> bool:
        created = condition_of(await job_status(client, MPIJOBS, namespace, "quota"), "Created")
        return created is not None and "exceeded quota: secrets" in (created["message"] or "")

    await eventually(refused, timeout=15, interval=0.05)
    print(f"launcher Jobs created while a quota refused the ssh Secret: {len(batch_jobs.events)}")
    assert batch_jobs.events == [], "no launcher Job while its Secret is refused"
    assert await phases(client, namespace) == {}, "nor workers"

    await set_quota(client, namespace, "secrets", 5)
    await running_launcher(client, namespace, "quota")
    assert [name for kind, name in batch_jobs.events if kind == "add"] == ["quota-launcher"]


async def test_an_ssh_secret_someone_else_created_fails_the_job_before_any_launcher(
    client: Client, namespace: str, batch_jobs: Recorder
) -> None:
    planted: Object = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "planted-ssh", "namespace": namespace},
        "type": "kubernetes.io/ssh-auth",
        "data": {"ssh-privatekey": "bm90IHlvdXJz", "ssh-publickey": "bm90IHlvdXJz"},
    }
    planted = await client.create(SECRETS, planted)
    await client.create(MPIJOBS, mpijob(namespace, "planted"))

    status = await wait_for_condition(client, namespace, "planted", "Failed")
    print(f"launcher Jobs created beside a planted NAME-ssh Secret: {len(batch_jobs.events)}")
    assert batch_jobs.events == [], "no launcher Job mounts a Secret that is not the job's"
    message = condition_of(status, "Failed")["message"]
    assert "Secret planted-ssh already exists and belongs to no owner" in message, message
    assert await phases(client, namespace) == {}
    kept = await client.get(SECRETS, "planted-ssh", namespace)
    assert kept["data"] == planted["data"] and not kept["metadata"].get("ownerReferences")


async def test_a_job_turned_invalid_stops_its_launcher_job_and_follows_its_clean_pod_policy(
    client: Client, namespace: str, batch_jobs: Recorder
) -> None:
    # cleanPodPolicy Running: the workers, still running, go; the launcher Job is stopped.
    await started(client, mpijob(namespace, "turned"))

    relative = {"spec": {"sshAuthMountPath": "relative/.ssh"}}
    await client.patch(MPIJOBS, "turned", relative, namespace)
    turned = time.monotonic()
    status = await wait_for_condition(client, namespace, "turned", "Failed")
    assert "spec.sshAuthMountPath" in condition_of(status, "Failed")["message"]

    async def stopped() -> bool:
        left = await phases(client, namespace)
        return (
            not any(name in left for name in worker_names("turned"))
            and (
                "delete",
                "turned-launcher",
            )
            in batch_jobs.events
        )

    await eventually(stopped, timeout=20, interval=0.05)
    took = time.monotonic() - turned
    print(f"turned invalid: launcher Job deleted, running workers gone {took:.2f} s later")
