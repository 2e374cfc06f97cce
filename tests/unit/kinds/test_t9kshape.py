"""T9k's current job shape is rewritten into the seed's, for MPIJob and ColossalAIJob."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from jobcore.jobs import crd_for
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.colossalaijob.spec import ColossalAIJobSpec
from jobkinds.mpijob import MPIJobKind
from jobkinds.mpijob.spec import MPIJobSpec
from tests.support.jobdocs import sample

SEED = sample("mpijob-random-walk")["spec"]


def current_shape() -> dict[str, Any]:
    """The seed's first MPIJob written the way T9k's tutorials write it today (its sample), the
    workers' restartPolicy set on their replica spec."""
    spec: dict[str, Any] = sample("mpijob-current-shape")["spec"]
    worker = next(replica for replica in spec["replicaSpecs"] if replica["type"] == "worker")
    worker["restartPolicy"] = "Never"
    return spec


def test_the_current_shape_normalises_to_the_seed_shape() -> None:
    seed = MPIJobSpec.model_validate(SEED).to_api()
    seed["worker"]["template"]["spec"]["restartPolicy"] = "Never"
    assert MPIJobSpec.model_validate(current_shape()).to_api() == seed


def test_the_normalised_model_round_trips() -> None:
    spec = MPIJobSpec.model_validate(current_shape())
    assert MPIJobSpec.model_validate(spec.to_api()) == spec
    assert "replicaSpecs" not in spec.to_api() and "mpiConfig" not in spec.to_api()


@pytest.mark.parametrize("seed_field", ["worker", "mca", "mpiHome"])
def test_mixing_the_shapes_names_the_fields(seed_field: str) -> None:
    mixed = {**current_shape(), seed_field: SEED[seed_field]}
    with pytest.raises(ValidationError) as error:
        MPIJobSpec.model_validate(mixed)
    message = str(error.value)
    assert "spec.replicaSpecs" in message and f"spec.{seed_field}" in message


def test_a_launcher_template_with_content_is_refused() -> None:
    spec = current_shape()
    spec["replicaSpecs"][0]["template"] = {"spec": {"containers": [{"name": "launcher"}]}}
    with pytest.raises(ValidationError, match=r"replicaSpecs\[launcher\]\.template"):
        MPIJobSpec.model_validate(spec)


def test_replica_specs_need_a_worker_entry() -> None:
    spec = current_shape()
    spec["replicaSpecs"] = spec["replicaSpecs"][:1]
    with pytest.raises(ValidationError, match="type: worker"):
        MPIJobSpec.model_validate(spec)


def test_the_crd_accepts_both_shapes() -> None:
    schema = crd_for(MPIJobKind())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    assert "worker" not in spec.get("required", [])
    assert {"worker", "mca", "mpiHome", "replicaSpecs", "mpiConfig"} <= spec["properties"].keys()
    replica = spec["properties"]["replicaSpecs"]["items"]
    assert replica["properties"]["type"]["enum"] == ["worker", "launcher"]


CAI_SEED = sample("colossalaijob-example")["spec"]


def colossalai_current_shape(*, launcher_template: bool = True) -> dict[str, Any]:
    """The seed's ColossalAIJob written the way T9k's tutorials write it today."""
    worker = CAI_SEED["worker"]
    launcher = {"spec": {"containers": [{"name": "launcher", **CAI_SEED["launcher"]}]}}
    return {
        "replicaSpecs": [
            {"type": "launcher", "replicas": 1, "template": launcher if launcher_template else {}},
            {
                "type": "worker",
                "replicas": worker["replicas"],
                "template": copy.deepcopy(worker["template"]),
            },
        ],
        "torchConfig": {
            "procPerWorker": worker["procPerWorker"],
            "script": worker["command"],
            "extraArgs": worker["torchArgs"],
        },
        "ssh": {
            "sshAuthMountPath": CAI_SEED["ssh"]["authMountPath"],
            "sshdPath": CAI_SEED["ssh"]["sshdPath"],
        },
    }


def test_a_current_shape_colossalai_job_normalises_to_the_seed_shape() -> None:
    assert (
        ColossalAIJobSpec.model_validate(colossalai_current_shape()).to_api()
        == ColossalAIJobSpec.model_validate(CAI_SEED).to_api()
    )


def test_an_empty_launcher_template_takes_the_worker_image() -> None:
    spec = ColossalAIJobSpec.model_validate(colossalai_current_shape(launcher_template=False))
    worker_image = CAI_SEED["worker"]["template"]["spec"]["containers"][0]["image"]
    assert spec.launcher.image == worker_image
    assert spec.launcher.resources is None


def test_mixing_colossalai_shapes_names_the_fields() -> None:
    with pytest.raises(ValidationError, match=r"spec\.torchConfig.*spec\.worker"):
        ColossalAIJobSpec.model_validate(
            {**colossalai_current_shape(), "worker": CAI_SEED["worker"]}
        )


def test_colossalai_reads_the_current_ssh_mount_path_name() -> None:
    spec = colossalai_current_shape()
    spec["ssh"]["sshAuthMountPath"] = "/home/trainer/.ssh"
    assert ColossalAIJobSpec.model_validate(spec).ssh.auth_mount_path == "/home/trainer/.ssh"
    schema = crd_for(ColossalAIJobKind())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    ssh = schema["properties"]["spec"]["properties"]["ssh"]["properties"]
    assert "sshAuthMountPath" in ssh, "the CRD must not prune T9k's current field name"
