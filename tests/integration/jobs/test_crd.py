"""Generated CRDs against a real API server: accepted, pruning, validation, status, columns."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import Literal

import pytest
import pytest_asyncio
from pydantic import Field

from jobcore import CUSTOM_RESOURCE_DEFINITIONS
from jobcore import PODS
from jobcore import ApiError
from jobcore import Client
from jobcore import InvalidError
from jobcore import Object
from jobcore import Resource
from jobcore._jobs.crd import crd_for
from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import Job
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import Outcome
from jobcore._jobs.models import Aggregate
from jobcore._jobs.models import ApiModel
from jobcore._jobs.models import JobCondition
from jobcore._jobs.models import JobSpec
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import PodTemplateSpec
from jobcore._jobs.models import ReplicaStatus
from jobcore._jobs.models import TaskStatus
from jobcore.testing import install_crd
from jobcore.testing import job_manifest

pytestmark = pytest.mark.integration


class WorkerSpec(ApiModel):
    replicas: int = Field(ge=1)
    template: PodTemplateSpec


class TinySpec(JobSpec):
    worker: WorkerSpec
    mca: dict[str, str] = Field(default_factory=dict)
    mpi_implementation: Literal["OpenMPI", "Intel"] = "OpenMPI"
    options: dict[str, Any] | None = None


class TinyKind:
    """A job kind in its own API group, so each test's CRD is its own."""

    resource: Resource
    short_names: Sequence[str] = ()
    spec_model: type[TinySpec] = TinySpec
    replica_types: Sequence[str] = ("worker",)
    child_resources: Sequence[Resource] = (PODS,)
    containers: Mapping[str, str] = {}
    debug_commands: Mapping[str, Sequence[str] | None] = {}
    kept_after_cleanup: Sequence[str] = ()
    printer_columns: Sequence[Mapping[str, Any]] = (
        {"name": "Workers", "type": "integer", "jsonPath": ".spec.worker.replicas"},
    )

    def __init__(self, group: str) -> None:
        self.resource = Resource(group, "v1alpha1", "TinyJob", "tinyjobs")

    def validate(self, job: Job[TinySpec]) -> list[FieldError]:
        return []

    def replicas(self, job: Job[TinySpec]) -> Mapping[str, int]:
        return {"worker": job.spec.worker.replicas}

    def render(self, job: Job[TinySpec], observed: Observed) -> list[Object]:
        return []

    def interpret(self, job: Job[TinySpec], observed: Observed) -> Outcome:
        return Outcome("pending")


@pytest_asyncio.fixture
async def kind(client: Client, namespace: str) -> AsyncIterator[TinyKind]:
    """The kind with its CRD installed (a rejection fails here, with the server's message)."""
    kind = TinyKind(f"{namespace}.example.com")
    crd = crd_for(kind)
    await client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    try:
        await install_crd(client, crd)
        yield kind
    finally:
        with contextlib.suppress(ApiError):
            await client.delete(CUSTOM_RESOURCE_DEFINITIONS, crd["metadata"]["name"])


CONTAINER: Object = {
    "name": "worker",
    "image": "busybox",
    "command": ["sleep", "1"],
    "securityContext": {"runAsUser": 1000, "capabilities": {"add": ["SYS_PTRACE"]}},
    "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": 2}},
}


def tiny_job(kind: TinyKind, namespace: str, name: str = "tiny", **spec: Any) -> Object:
    template = {
        "metadata": {"labels": {"app": "tiny"}, "annotations": {"a": "b"}},
        "spec": {
            "containers": [CONTAINER],
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"operator": "Exists"}],
        },
    }
    tiny = {"worker": {"replicas": 2, "template": template}, "mca": {"btl": "tcp,self"}, **spec}
    return job_manifest(kind, tiny, name=name, namespace=namespace, uid=None)


async def test_unknown_pod_fields_round_trip_and_unknown_spec_fields_are_pruned(
    client: Client, namespace: str, kind: TinyKind
) -> None:
    sent = tiny_job(kind, namespace, options={"deep": {"x": [1, "two", None]}}, bogus=1)
    created = await client.create(kind.resource, sent)
    stored = (await client.get(kind.resource, "tiny", namespace))["spec"]
    assert stored == created["spec"]
    assert "bogus" not in stored
    assert stored["worker"] == sent["spec"]["worker"]
    assert stored["worker"]["template"]["spec"]["containers"] == [CONTAINER]
    assert stored["options"] == {"deep": {"x": [1, "two", None]}}
    assert TinySpec.model_validate(stored).worker.template.spec.containers[0].image == "busybox"


async def test_a_null_optional_field_is_pruned_not_rejected(
    client: Client, namespace: str, kind: TinyKind
) -> None:
    created = await client.create(kind.resource, tiny_job(kind, namespace, scheduler=None))
    assert "scheduler" not in created["spec"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"worker": {"replicas": 0}}, "spec.worker.replicas"),
        ({"mpiImplementation": "MPICH"}, "spec.mpiImplementation"),
        ({"mca": {"btl": 1}}, "spec.mca.btl"),
        ({"worker": {"template": {"spec": {"containers": []}}}}, "containers"),
        ({"runPolicy": {"cleanUpWorkers": "yes"}}, "spec.runPolicy.cleanUpWorkers"),
    ],
)
async def test_the_server_rejects_what_the_model_rejects(
    client: Client, namespace: str, kind: TinyKind, change: Object, field: str
) -> None:
    job = tiny_job(kind, namespace)
    merge(job["spec"], change)
    with pytest.raises(InvalidError) as error:
        await client.create(kind.resource, job)
    assert field in error.value.message


def merge(target: Object, patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = value


async def test_status_is_written_through_the_status_subresource(
    client: Client, namespace: str, kind: TinyKind
) -> None:
    created = await client.create(kind.resource, tiny_job(kind, namespace))
    status = JobStatus(
        conditions=[JobCondition(type="Running", status="True", reason="Started")],
        phase="Running",
        tasks=[
            TaskStatus(type="worker", status=[ReplicaStatus(phase="Running", name="tiny-worker-0")])
        ],
        aggregate=Aggregate(running=1, pending=1),
        ready="1/2",
    ).to_api()
    created["status"] = {**status, "unknownField": "pruned"}
    updated = await client.update_status(kind.resource, created)
    assert updated["status"] == status
    assert JobStatus.model_validate(updated["status"]).phase == "Running"
    assert updated["spec"] == created["spec"]

    updated["status"]["phase"] = "Exploded"
    with pytest.raises(InvalidError):
        await client.update_status(kind.resource, updated)

    again = await client.get(kind.resource, "tiny", namespace)
    again["status"] = {"phase": "Failed"}
    again["spec"]["worker"]["replicas"] = 3
    after_update = await client.update(kind.resource, again)
    assert after_update["status"] == status, "the main resource must not write status"
    assert after_update["spec"]["worker"]["replicas"] == 3


@pytest.fixture
def kubectl() -> Path:
    path = Path(os.environ.get("KUBEBUILDER_ASSETS", ""), "kubectl")
    if not path.is_file():
        pytest.skip("no kubectl next to the control plane binaries")
    return path


async def test_kubectl_shows_the_printer_columns(
    client: Client, namespace: str, kind: TinyKind, kubeconfig_path: str, kubectl: Path
) -> None:
    created = await client.create(kind.resource, tiny_job(kind, namespace))
    created["status"] = {"phase": "Running", "ready": "1/2"}
    await client.update_status(kind.resource, created)
    process = await asyncio.create_subprocess_exec(
        str(kubectl),
        "--kubeconfig",
        kubeconfig_path,
        "get",
        f"tinyjobs.{kind.resource.group}",
        "-n",
        namespace,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    header, row = out.decode().splitlines()
    assert header.split() == ["NAME", "PHASE", "READY", "WORKERS", "AGE"]
    assert row.split()[:4] == ["tiny", "Running", "1/2", "2"]
