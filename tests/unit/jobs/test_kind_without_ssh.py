"""A kind whose workers reach each other without ssh (a JAXJob-style coordinator and workers)
builds its children, outcome and checks from `jobcore.jobs` alone."""

from __future__ import annotations

from pydantic import Field

from jobcore import Resource
from jobcore.jobs import ApiModel
from jobcore.jobs import JobSpec
from jobcore.jobs import PodTemplateSpec
from jobcore.jobs import container_errors
from jobcore.jobs import failure_message
from jobcore.jobs import headless_service
from jobcore.jobs import job_name_errors
from jobcore.jobs import pod_failures
from jobcore.jobs import pod_problems
from jobcore.jobs import worker_host
from jobcore.jobs import worker_name
from jobcore.testing import ModelKind
from jobcore.testing import job_of
from jobcore.testing import pod_of
from jobcore.testing import terminated
from jobcore.testing import waiting


class Workers(ApiModel):
    replicas: int = Field(default=2, ge=1)
    template: PodTemplateSpec


class CoordinatedSpec(JobSpec):
    worker: Workers


KIND = ModelKind(Resource("example.com", "v1alpha1", "JaxJob", "jaxjobs"), CoordinatedSpec)


def jaxjob(name: str = "train", image: str | None = "jax") -> dict[str, object]:
    container = {"name": "jax", **({"image": image} if image else {})}
    return {
        "apiVersion": "example.com/v1alpha1",
        "kind": "JaxJob",
        "metadata": {"name": name, "namespace": "team-a", "uid": "u1"},
        "spec": {"worker": {"template": {"spec": {"containers": [container]}}}},
    }


def test_the_workers_resolve_through_a_headless_service_on_the_kinds_own_port() -> None:
    job = job_of(KIND, jaxjob())
    service = headless_service(job, {"coordinator": 1234})
    assert service["metadata"]["name"] == "train"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["ports"] == [{"name": "coordinator", "port": 1234, "targetPort": 1234}]
    assert worker_name(job, 1) == "train-worker-1"
    assert worker_host(job, 1) == "train-worker-1.train.team-a.svc.cluster.local"


def test_failed_and_stuck_pods_are_worded_as_for_any_kind() -> None:
    job = job_of(KIND, jaxjob())
    failed = pod_of(
        job, "train-worker-0", "worker", phase="Failed", containers=[terminated("jax", 3)]
    )
    stuck = pod_of(job, "train-worker-1", "worker", containers=[waiting("jax", "ImagePullBackOff")])
    assert failure_message(failed, "jax") == (
        "Pod[train-worker-0] exited with error code 3 (container jax)"
    )
    evicted = pod_of(job, "train-worker-2", "worker", phase="Failed", reason="Evicted")
    assert pod_failures([failed, stuck, None, evicted], "jax") == (
        "Pod[train-worker-0] exited with error code 3 (container jax); "
        "Pod[train-worker-2] failed: Evicted"
    )
    assert pod_problems([stuck, None]) == (
        "Pod[train-worker-1] container jax is waiting: ImagePullBackOff"
    )


def test_the_name_and_the_worker_container_are_checked() -> None:
    job = job_of(KIND, jaxjob(name="Train", image=None))
    errors = [
        *job_name_errors(job, worker_host(job, 1)),
        *container_errors(job.spec, "jax"),
    ]
    assert [str(e).split(":")[0] for e in errors] == [
        "metadata.name",
        "spec.worker.template.spec.containers[0].image",
    ]
