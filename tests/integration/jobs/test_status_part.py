"""A kind that reports a status of its own shape, without touching jobcore.

The kind names a `status_part`, docs/jobkinds.md's (docs/examples/briefstatus.py): its CRD's
status schema and printer columns come from it, and the controller stores statuses in its shape
and reads them back (the restart it counted is still counted when the job ends). MPIJob's
children and outcome stand for any kind's; the simulated node plays the pods.
"""

from __future__ import annotations

import pytest

from docs.examples.briefstatus import BRIEF_STATUS
from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import KindHooks
from jobcore.jobs import RetryBackoff
from jobcore.jobs import crd_for
from jobcore.testing import SimulatedNode
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import job_status
from jobkinds.mpijob import MPIJobKind
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

BRIEF_JOBS = Resource("test.jobcore.dev", "v1", "BriefJob", "briefjobs")


class BriefJobKind(MPIJobKind):
    resource = BRIEF_JOBS
    short_names = ()
    hooks = KindHooks(status_part=BRIEF_STATUS)


def test_the_crd_takes_the_parts_schema_and_columns() -> None:
    version = crd_for(BriefJobKind())["spec"]["versions"][0]
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert set(status["properties"]) == {"state", "restarts"}
    assert version["additionalPrinterColumns"][0]["jsonPath"] == ".status.state"


async def test_a_job_reports_in_its_kinds_shape_and_counts_its_restart(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    launchers: list[str] = []

    def first_launcher(pod: Object) -> bool:
        labels = pod["metadata"].get("labels") or {}
        if labels.get(REPLICA_TYPE_LABEL) != "launcher" or launchers:
            return False
        launchers.append(pod["metadata"]["uid"])
        return True

    simulated_node.when(first_launcher, exit_code=1, after=0.2)
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.2)
    job = mpijob(namespace, "brief", runPolicy={"backoffLimit": 1, "restartPolicy": "OnFailure"})
    job["apiVersion"], job["kind"] = BRIEF_JOBS.api_version, BRIEF_JOBS.kind
    async with job_controller(
        client, BriefJobKind(), namespace=namespace, retry_backoff=RetryBackoff(1)
    ):
        await client.create(BRIEF_JOBS, job)

        async def ended() -> bool:
            status = await job_status(client, BRIEF_JOBS, namespace, "brief")
            return status.get("state") in ("Succeeded", "Failed")

        await eventually(ended, timeout=30)
    status = await job_status(client, BRIEF_JOBS, namespace, "brief")
    assert status == {"state": "Succeeded", "restarts": 1}
