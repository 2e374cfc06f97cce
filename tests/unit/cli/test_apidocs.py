"""API reference pages: the committed ones match the models; what a page says about a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from typing import Literal

from pydantic import ConfigDict
from pydantic import Field

from controllers.apidocs import api_reference
from controllers.apidocs import write_api_reference
from controllers.kinds import BUNDLED_KINDS
from controllers.kinds import installed_kinds
from jobcore import Resource
from jobcore.jobs import ApiModel
from jobcore.jobs import JobKind
from jobcore.jobs import JobSpec
from jobcore.jobs import PodTemplateSpec
from jobcore.testing import ModelKind


class Retry(ApiModel):
    """How often the tiny job is retried."""

    limit: int = Field(default=3, ge=0, le=10, description="Attempts before giving up.")
    mode: Literal["Never", "Always"] = "Never"


class WorkerSpec(ApiModel):
    replicas: int = Field(default=1, ge=1, description="How many workers run.")
    args: list[str] = Field(default_factory=list, description="Passed to the program.")
    template: PodTemplateSpec


def _worker_optional_in_crd(schema: dict[str, Any]) -> None:
    schema.pop("required", None)


class TinySpec(JobSpec):
    """A tiny job to document."""

    model_config = ConfigDict(json_schema_extra=_worker_optional_in_crd)

    worker: WorkerSpec = Field(description="The workers.")
    retry: Retry = Field(default_factory=Retry, description="The retry policy.")
    labels: dict[str, str] = Field(default_factory=dict)
    port: int | str | None = None


KIND: JobKind[Any] = ModelKind(
    Resource("tiny.example.com", "v1alpha1", "TinyJob", "tinyjobs"),
    TinySpec,
    short_names=("tj",),
    printer_columns=({"name": "Workers", "type": "integer", "jsonPath": ".spec.worker.replicas"},),
)


def section(page: str, name: str) -> str:
    """The text of one `### name` section."""
    start = page.index(f"\n### {name}\n")
    end = page.find("\n##", start + 1)
    return page[start : end if end != -1 else None]


def test_a_field_shows_its_wire_name_type_default_and_description() -> None:
    retry = section(api_reference(KIND), "Retry")
    assert "How often the tiny job is retried." in retry  # the model's docstring
    assert "| `limit` | integer (0 to 10) | `3` | Attempts before giving up. |" in retry
    assert "| `mode` | one of `Never`, `Always` | `Never` |  |" in retry
    worker = section(api_reference(KIND), "WorkerSpec")
    assert "| `args` | list of string | `[]` | Passed to the program. |" in worker  # factory


def test_nested_models_get_sections_linked_from_their_fields() -> None:
    page = api_reference(KIND)
    spec = section(page, "TinySpec")
    assert "| `retry` | [Retry](#retry) | its fields' defaults | The retry policy. |" in spec
    assert "| `labels` | map of string to string | `{}` |  |" in spec
    assert "| `port` | integer or string | — |  |" in spec
    assert "Appears at `spec.retry`." in section(page, "Retry")
    assert page.index("### TinySpec") < page.index("## Status") < page.index("### JobStatus")
    assert "Appears at `status.conditions[]`." in section(page, "JobCondition")
    assert "[Job status](../status.md)" in page


def test_a_field_the_crd_leaves_optional_but_the_model_requires_is_marked() -> None:
    spec = section(api_reference(KIND), "TinySpec")
    assert "| `worker` | [WorkerSpec](#workerspec) | required\\* | The workers. |" in spec
    assert "\\* Required by the kind, but not by the CRD's schema" in spec


def test_a_pod_template_is_summarized_by_the_fields_jobcore_reads() -> None:
    page = api_reference(KIND)
    template = section(page, "PodTemplateSpec")
    assert "A Kubernetes [PodTemplateSpec](https://kubernetes.io/" in template
    assert (
        "| `spec.containers[].name` | string (at most 63 characters, matching "
        "`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) | required | A DNS-1123 label, unique within the "
        "pod. |" in template
    )
    assert "The same fields as `spec.containers[]`." in template
    assert "### Container\n" not in page and "### PodSpec\n" not in page


def test_the_page_names_the_resource_and_its_columns() -> None:
    page = api_reference(KIND)
    assert page.startswith("# TinyJob API reference\n")
    assert "| API version | `tiny.example.com/v1alpha1` |" in page
    assert "| short names | `tj` |" in page
    assert "| Workers | integer | `.spec.worker.replicas` |  |" in page


def test_the_bundled_kinds_get_a_page_each_and_the_index(tmp_path: Path) -> None:
    kinds = {installed.name: installed.kind for installed in installed_kinds(BUNDLED_KINDS)}
    write_api_reference(kinds, tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "README.md",
        "colossalaijob.md",
        "horovodjob.md",
        "kubeflow-mpijob.md",
        "mpijob.md",
    ]
    index = (tmp_path / "README.md").read_text()
    assert "| MPIJob | `batch.tensorstack.dev/v1beta1` | `mpijobs` |" in index
    assert "| MPIJob | `kubeflow.org/v2beta1` | `mpijobs` | — | [kubeflow-mpijob.md]" in index
