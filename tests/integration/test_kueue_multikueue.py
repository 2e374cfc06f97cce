"""MultiKueue for jobcore's kinds, on the real API server with Kueue's stand-in: a job that
another controller runs (`spec.managedBy`) gets no pods and no status from jobcore; one that
MultiKueue runs in a worker cluster keeps its Workload here, Finished when the status copied
back says the job ended."""

from __future__ import annotations

import pytest

from jobcore import Client
from jobcore.testing import SimulatedNode
from jobcore.testing import eventually
from jobcore.testing import job_status
from jobcore.testing import wait_for_phase
from tests.integration.test_kueue_jobs import finished_workload
from tests.integration.test_kueue_jobs import kueue_controller  # noqa: F401 (a fixture)
from tests.integration.test_kueue_jobs import pods_of
from tests.integration.test_kueue_jobs import queued_mpijob
from tests.integration.test_kueue_jobs import workload_of
from tests.mpijobs import MPIJOBS

pytestmark = pytest.mark.integration

MULTIKUEUE = "kueue.x-k8s.io/multikueue"


@pytest.mark.usefixtures("kueue_controller")
async def test_jobs_managed_by_others_get_no_pods_nor_status_while_a_job_beside_them_runs(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    await client.create(MPIJOBS, queued_mpijob(namespace, "local"))
    await wait_for_phase(client, MPIJOBS, namespace, "local", "Running", timeout=30)
    other = queued_mpijob(namespace, "other")
    other["spec"]["managedBy"] = "example.com/other"
    await client.create(MPIJOBS, other)
    remote = queued_mpijob(namespace, "remote")
    remote["spec"]["managedBy"] = MULTIKUEUE
    await client.create(MPIJOBS, remote)

    async def dispatched() -> bool:  # MultiKueue's job has its Workload here, to dispatch
        return await workload_of(client, namespace, "remote") is not None

    await eventually(dispatched, timeout=20)
    # The job beside them ran its pods all along; the others have none, and no status.
    assert await pods_of(client, namespace, "local")
    for name in ("other", "remote"):
        assert not await pods_of(client, namespace, name)
        assert await job_status(client, MPIJOBS, namespace, name) == {}
    assert await workload_of(client, namespace, "other") is None

    # MultiKueue copies the worker's status back: the job ended, so its Workload is Finished.
    ended = {"type": "Completed", "status": "True", "reason": "Succeeded", "message": "Done."}
    ended["lastTransitionTime"] = "2026-01-01T00:00:00Z"
    copied = {"status": {"phase": "Succeeded", "conditions": [ended]}}
    await client.patch(MPIJOBS, "remote", copied, namespace, subresource="status")
    workload = await finished_workload(client, namespace, "remote")
    assert not await pods_of(client, namespace, "remote")
    assert [c["reason"] for c in workload["status"]["conditions"] if c["type"] == "Finished"] == [
        "Succeeded"
    ]
