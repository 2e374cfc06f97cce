"""A kind that renders a child outside its `child_resources`: the user sees it on the job.

The controller neither watches nor owns such a child, so it creates none of the job's
children; the job is marked Failed with reason InvalidSpec and a message naming the child's
kind, with a Warning Event, and is not retried. The real controller, the real API server.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import Client
from jobcore import Object
from jobcore import Request
from jobcore import Resource
from jobcore.jobs import INVALID_SPEC
from jobcore.jobs import Job
from jobcore.jobs import JobSpec
from jobcore.jobs import Observed
from jobcore.testing import ModelKind
from jobcore.testing import condition
from jobcore.testing import events_of
from jobcore.testing import job_controller
from jobcore.testing import job_manifest
from jobcore.testing import live_pods
from jobcore.testing import resync
from jobcore.testing import wait_for_events
from jobcore.testing import wait_for_phase

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class ConfigMapKind(ModelKind[JobSpec]):
    """Renders a ConfigMap and a Pod, but lists only Pods among its children."""

    def render(self, job: Job[JobSpec], observed: Observed) -> list[Object]:
        config: Object = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{job.name}-config"},
            "data": {"a": "b"},
        }
        pod: Object = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{job.name}-worker-0", "labels": job.labels("worker", 0)},
            "spec": {"containers": [{"name": "worker", "image": "busybox"}]},
        }
        return [config, pod]


async def test_a_child_outside_child_resources_fails_the_job_with_a_condition_and_an_event(
    client: Client, namespace: str
) -> None:
    jobs = Resource(f"{namespace}.example.com", "v1", "ConfigJob", "configjobs")
    kind = ConfigMapKind(jobs, JobSpec, child_resources=(PODS,))
    async with job_controller(client, kind, namespace=namespace) as controller:
        await client.create(jobs, job_manifest(kind, {}, name="cm", namespace=namespace, uid=None))
        status = await wait_for_phase(client, jobs, namespace, "cm", "Failed")
        failed = condition(status, "Failed")
        message = (
            "Invalid spec: spec: ConfigJob rendered ['ConfigMap'], not in its child_resources: "
            "a bug in the kind; none of the job's children is created until it is fixed"
        )
        assert (failed["status"], failed["reason"], failed["message"]) == (
            "True",
            INVALID_SPEC,
            message,
        )
        await wait_for_events(client, namespace, "cm", INVALID_SPEC, kind="ConfigJob")
        # Another pass changes nothing: no retry, no second Event, no child.
        await resync(controller, Request(namespace, "cm"))
        events = await events_of(client, namespace, "cm", kind="ConfigJob")
        assert events == [(INVALID_SPEC, message)]
        assert await live_pods(client, namespace) == {}
        config_maps = (await client.list(CONFIGMAPS, namespace))["items"]
        assert "cm-config" not in {item["metadata"]["name"] for item in config_maps}
