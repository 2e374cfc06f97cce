"""The kit's waits, timing out, say why: the job's last phase, its conditions, its Warning
Events and the errors its reconciles raised, not a bare TimeoutError."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from jobcore import Client
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import Job
from jobcore.jobs import JobSpec
from jobcore.jobs import Observed
from jobcore.jobs import Outcome
from jobcore.testing import ModelKind
from jobcore.testing import job_controller
from jobcore.testing import job_manifest
from jobcore.testing import wait_for_end
from jobcore.testing import wait_for_phase
from jobcore.testing import wait_for_phases

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class BrokenKind(ModelKind[JobSpec]):
    """Renders a ConfigMap it does not list for a job named `unserved`, and fails to interpret
    any other job."""

    def render(self, job: Job[JobSpec], observed: Observed) -> list[Object]:
        if job.name != "unserved":
            return []
        return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}]

    def interpret(self, job: Job[JobSpec], observed: Observed) -> Outcome:
        raise RuntimeError("interpret broke")


async def test_the_waits_report_phase_conditions_events_and_reconcile_errors(
    client: Client, namespace: str
) -> None:
    jobs = Resource(f"{namespace}.example.com", "v1", "BrokenJob", "brokenjobs")
    kind = BrokenKind(jobs, JobSpec)
    async with job_controller(client, kind, namespace=namespace):
        for name in ("unserved", "broken"):
            await client.create(jobs, job_manifest(kind, {}, name=name, namespace=namespace))
        # The report below is of a job that has a phase: wait for it first (a loaded machine
        # may take longer than the 3 s below to start the controller and write it).
        await wait_for_phase(client, jobs, namespace, "unserved", "Failed", timeout=60)
        with pytest.raises(AssertionError) as failed:
            await wait_for_phase(client, jobs, namespace, "unserved", "Running", timeout=3)
        lines = str(failed.value).splitlines()
        assert lines[:3] == [
            "unserved not Running within 3 s:",
            "  last phase: Failed",
            "  condition Failed=True InvalidSpec: Invalid spec: spec: BrokenJob rendered "
            "['ConfigMap'], not in its child_resources: a bug in the kind; none of the job's "
            "children is created until it is fixed",
        ]
        assert lines[-1].startswith("  Warning event InvalidSpec: Invalid spec: spec: BrokenJob")

        with pytest.raises(AssertionError) as failed:
            await wait_for_end(client, jobs, namespace, "broken", timeout=3, explain=lambda: "ok")
        assert str(failed.value) == (
            "broken did not end in 3 s:\n"
            "  last phase: (no status yet)\n"
            + "  reconcile error: RuntimeError: interpret broke\n" * 3
            + "ok"
        )

        with pytest.raises(AssertionError) as failed:
            await wait_for_phases(
                client, jobs, namespace, ["broken", "unserved"], "Running", timeout=1
            )
        assert str(failed.value).startswith(
            "not Running within 1 s: {'broken': None, 'unserved': 'Failed'}; broken:\n"
            "  last phase: (no status yet)\n"
            "  reconcile error: RuntimeError: interpret broke\n"
        )
