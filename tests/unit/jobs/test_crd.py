"""CRD generation: structural schemas from the pydantic models, names, columns, YAML files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from typing import Literal

import pytest
import yaml
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from jobcore import Object
from jobcore import Resource
from jobcore._jobs.crd import crd_for
from jobcore._jobs.crd import structural_schema
from jobcore._jobs.crd import write_crds
from jobcore._jobs.kind import JobKind
from jobcore._jobs.models import ApiModel
from jobcore._jobs.models import JobSpec
from jobcore._jobs.models import PodTemplateSpec
from jobcore.testing import ModelKind

PRESERVE = "x-kubernetes-preserve-unknown-fields"
NOT_STRUCTURAL = {"$ref", "$defs", "anyOf", "allOf", "oneOf", "not", "title", "default"}


class WorkerSpec(ApiModel):
    """The workers of a tiny job."""

    replicas: int = Field(ge=1, description="How many workers run.")
    cmd: list[str]
    template: PodTemplateSpec


class TinySpec(JobSpec):
    """A tiny MPI-like job used to exercise the generator."""

    worker: WorkerSpec
    mca: dict[str, str] = Field(default_factory=dict)
    extra_mpi_args: list[str] | None = Field(default=None, alias="extraMPIArgs")
    mpi_implementation: Literal["OpenMPI", "Intel"] = "OpenMPI"
    slots_per_worker: int | None = Field(default=None, gt=0)
    ssh_port: int | str | None = None
    options: dict[str, Any] | None = None
    anything: Any = None


def tiny_kind(group: str = "tiny.example.com", plural: str = "tinyjobs") -> ModelKind[TinySpec]:
    """A job kind that is only the tiny model, named `plural`.`group`."""
    return ModelKind(
        Resource(group, "v1alpha1", "TinyJob", plural),
        TinySpec,
        short_names=("tj", "tiny"),
        printer_columns=(
            {"name": "Workers", "type": "integer", "jsonPath": ".spec.worker.replicas"},
        ),
    )


KIND: JobKind[Any] = tiny_kind()


def assert_structural(node: Mapping[str, Any], path: str = "$") -> None:
    """Kubernetes' structural rules, as far as this generator can break them."""
    assert not NOT_STRUCTURAL & node.keys(), f"{path}: {NOT_STRUCTURAL & node.keys()}"
    assert node.get("type") or node.get(PRESERVE) or node.get("x-kubernetes-int-or-string"), (
        f"{path} has no type"
    )
    extra = node.get("additionalProperties")
    assert extra is None or isinstance(extra, dict), f"{path}: additionalProperties: {extra}"
    assert not ("properties" in node and extra), f"{path}: properties and additionalProperties"
    for name, sub in (node.get("properties") or {}).items():
        assert_structural(sub, f"{path}.{name}")
    if node.get("type") == "array":
        assert "items" in node, f"{path} is an array without items"
        assert_structural(node["items"], f"{path}[]")
    if extra:
        assert_structural(extra, f"{path}.*")


def version(crd: Object) -> dict[str, Any]:
    (only,) = crd["spec"]["versions"]
    result: dict[str, Any] = only
    return result


def root(crd: Object) -> dict[str, Any]:
    result: dict[str, Any] = version(crd)["schema"]["openAPIV3Schema"]
    return result


@pytest.fixture
def crd() -> Object:
    return crd_for(KIND)


def test_the_whole_schema_is_structural(crd: Object) -> None:
    assert_structural(root(crd))


def test_names_scope_version_and_subresources(crd: Object) -> None:
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"] == {"name": "tinyjobs.tiny.example.com"}
    assert crd["spec"]["group"] == "tiny.example.com"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"] == {
        "kind": "TinyJob",
        "listKind": "TinyJobList",
        "plural": "tinyjobs",
        "singular": "tinyjob",
        "shortNames": ["tj", "tiny"],
        "categories": ["jobcore"],
    }
    assert version(crd)["name"] == "v1alpha1"
    assert version(crd)["served"] is True
    assert version(crd)["storage"] is True
    assert version(crd)["subresources"] == {"status": {}}


def test_printer_columns_phase_ready_the_kinds_own_then_age(crd: Object) -> None:
    columns = version(crd)["additionalPrinterColumns"]
    assert [(c["name"], c["type"], c["jsonPath"]) for c in columns] == [
        ("Phase", "string", ".status.phase"),
        ("Ready", "string", ".status.ready"),
        ("Workers", "integer", ".spec.worker.replicas"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]
    assert "ready/total" in columns[1]["description"].lower()


def test_root_requires_spec_and_describes_status(crd: Object) -> None:
    schema = root(crd)
    assert schema["type"] == "object"
    assert schema["required"] == ["spec"]
    assert list(schema["properties"]) == ["apiVersion", "kind", "metadata", "spec", "status"]
    assert schema["properties"]["metadata"] == {"type": "object"}
    status = schema["properties"]["status"]["properties"]
    assert {"conditions", "phase", "tasks", "aggregate", "ready"} <= status.keys()
    assert "Succeeded" in status["phase"]["enum"]
    condition = status["conditions"]["items"]
    assert condition["required"] == ["type", "status"]
    assert "ReplicaFailure" in condition["properties"]["type"]["enum"]
    assert condition["properties"]["lastTransitionTime"]["type"] == "string"
    replica = status["tasks"]["items"]["properties"]["status"]["items"]
    exit_code = replica["properties"]["containers"]["items"]["properties"]["exitCode"]
    assert exit_code["type"] == "integer"
    assert exit_code["description"]
    assert status["aggregate"]["properties"]["running"]["type"] == "integer"


def test_spec_properties_are_camel_case_aliases() -> None:
    spec = structural_schema(TinySpec)
    assert {"runPolicy", "worker", "mca", "extraMPIArgs", "mpiImplementation"} <= set(
        spec["properties"]
    )
    assert "cleanUpWorkers" in spec["properties"]["runPolicy"]["properties"]
    assert "slotsPerWorker" in spec["properties"]
    assert not any("_" in name for name in spec["properties"])


def test_required_fields_constraints_enums_and_descriptions() -> None:
    spec = structural_schema(TinySpec)
    assert spec["required"] == ["worker"]
    assert spec["description"] == "A tiny MPI-like job used to exercise the generator."
    worker = spec["properties"]["worker"]
    assert worker["required"] == ["replicas", "cmd", "template"]
    assert worker["properties"]["replicas"] == {
        "type": "integer",
        "description": "How many workers run.",
        "minimum": 1,
    }
    assert worker["properties"]["cmd"] == {"type": "array", "items": {"type": "string"}}
    assert spec["properties"]["mpiImplementation"] == {
        "type": "string",
        "enum": ["OpenMPI", "Intel"],
    }
    assert spec["properties"]["slotsPerWorker"] == {
        "type": "integer",
        "minimum": 0,
        "exclusiveMinimum": True,
    }
    clean_up = spec["properties"]["runPolicy"]["properties"]["cleanUpWorkers"]
    assert clean_up["type"] == "boolean"
    assert clean_up["description"].startswith("Delete the workers")


def test_optional_fields_unwrap_to_their_type() -> None:
    spec = structural_schema(TinySpec)
    assert spec["properties"]["extraMPIArgs"] == {"type": "array", "items": {"type": "string"}}
    assert spec["properties"]["scheduler"]["type"] == "object"
    assert "nullable" not in spec["properties"]["scheduler"]


def test_maps_any_and_int_or_string() -> None:
    spec = structural_schema(TinySpec)
    assert spec["properties"]["mca"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }
    assert spec["properties"]["options"] == {"type": "object", PRESERVE: True}
    assert spec["properties"]["anything"] == {PRESERVE: True}
    assert spec["properties"]["sshPort"] == {"x-kubernetes-int-or-string": True}


def test_pod_template_keeps_unknown_fields_next_to_typed_ones() -> None:
    spec = structural_schema(TinySpec)
    template = spec["properties"]["worker"]["properties"]["template"]
    assert template[PRESERVE] is True
    assert template["required"] == ["spec"]
    pod = template["properties"]["spec"]
    assert pod[PRESERVE] is True
    assert pod["properties"]["containers"]["minItems"] == 1
    container = pod["properties"]["containers"]["items"]
    assert container[PRESERVE] is True
    assert container["properties"]["image"] == {"type": "string"}
    assert container["properties"]["env"]["items"] == {"type": "object", PRESERVE: True}
    assert container["properties"]["name"]["pattern"] == "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
    assert template["properties"]["metadata"]["properties"]["labels"] == {
        "type": "object",
        "additionalProperties": {
            "type": "string",
            "maxLength": 63,
            "pattern": "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
        },
    }


def test_strict_models_have_no_preserve_and_no_additional_properties_false() -> None:
    spec = structural_schema(TinySpec)
    assert PRESERVE not in spec
    assert "additionalProperties" not in spec
    assert "additionalProperties" not in spec["properties"]["worker"]


def test_output_is_deterministic_and_free_of_shared_nodes() -> None:
    assert crd_for(KIND) == crd_for(KIND)
    text = yaml.safe_dump(crd_for(KIND), sort_keys=False)
    assert text == yaml.safe_dump(crd_for(KIND), sort_keys=False)
    assert "&id" not in text, "a node object is shared, so YAML writes an anchor"


def test_write_crds_writes_one_parseable_file_per_kind(tmp_path: Path) -> None:
    other = tiny_kind(group="other.example.com", plural="others")
    paths = write_crds([KIND, other], tmp_path / "crds")
    assert [p.name for p in paths] == [
        "tiny.example.com_tinyjobs.yaml",
        "other.example.com_others.yaml",
    ]
    assert yaml.safe_load(paths[0].read_text(encoding="utf-8")) == crd_for(KIND)
    assert yaml.safe_load(paths[1].read_text(encoding="utf-8")) == crd_for(other)
    first = paths[0].read_text(encoding="utf-8")
    write_crds([KIND], tmp_path / "crds")
    assert paths[0].read_text(encoding="utf-8") == first


def test_write_crds_refuses_two_kinds_with_one_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"tinyjobs\.tiny\.example\.com"):
        write_crds([KIND, tiny_kind()], tmp_path)


class Node(ApiModel):
    children: list[Node] = Field(default_factory=list)


class Either(ApiModel):
    value: int | list[str]


class Pair(ApiModel):
    pair: tuple[int, str]


class TypedExtras(BaseModel):
    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, int] = Field(init=False)
    name: str


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (Node, "cannot recurse"),
        (Either, "union"),
        (Pair, "prefixItems"),
        (TypedExtras, "typed extra fields"),
    ],
)
def test_what_a_structural_schema_cannot_say_is_refused(
    model: type[BaseModel], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        structural_schema(model)


def test_cluster_scoped_kinds_are_refused() -> None:
    resource = Resource("x.example.com", "v1", "TinyJob", "tinyjobs", namespaced=False)
    kind = ModelKind(resource, TinySpec)
    with pytest.raises(ValueError, match="namespaced"):
        crd_for(kind)
