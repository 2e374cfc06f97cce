"""MPIJob's API: T9k's `batch.tensorstack.dev/v1beta1` MPIJob as pydantic models.

The seed's shape (spec.worker, spec.mca, spec.mpiHome, spec.ssh) plus spec.mpiImplementation;
T9k's current shape (spec.replicaSpecs, spec.mpiConfig) is rewritten into it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict
from pydantic import Field
from pydantic import model_validator

from jobcore.jobs import ApiModel
from jobcore.jobs import JobSpec
from jobcore.jobs import PodTemplateSpec
from jobcore.launcher import LAUNCHER
from jobcore.launcher import SSH_MOUNT
from jobcore.launcher import WORKER
from jobcore.launcher import SSHSpec
from jobcore.launcher import Transport
from jobcore.launcher import WorkerCount
from jobkinds import t9kshape
from jobkinds.mpi.flavours import Implementation

WORKER_CONTAINER = "mpi-worker"
"""The template's container that runs sshd on workers and the MPI launcher on the launcher."""
LAUNCHER_CONTAINER = "mpi-launcher"


class MPIWorkerSpec(ApiModel):
    """The workers, and the MPI program mpirun starts on them."""

    replicas: WorkerCount = Field(default=1, description="Number of worker pods.")
    extra_mpi_args: list[str] = Field(
        default_factory=list,
        alias="extraMPIArgs",
        description="Extra mpirun arguments; `-N n` also sets each worker's slot count.",
    )
    cmd: list[str] = Field(
        min_length=1, description="The program mpirun starts on the workers, with its arguments."
    )
    template: PodTemplateSpec = Field(
        description="Pod template of workers and launcher; needs a container named mpi-worker, "
        "whose command and args are replaced (sshd on workers, mpirun on the launcher)."
    )


class MPIJobSSHSpec(SSHSpec):
    """Where sshd is in the worker image, where the job's ssh keys are mounted, and its port."""

    ssh_auth_mount_path: str = Field(
        default=SSH_MOUNT,
        description="Where the job's ssh keys are mounted: the ~/.ssh of the user running MPI.",
    )


class MPIConfig(ApiModel):
    """T9k's current shape of the MPI settings; rewritten into worker, mca and mpiHome."""

    home: str | None = Field(default=None, description="As spec.mpiHome.")
    mpi_implementation: Implementation | None = Field(
        default=None, description="As spec.mpiImplementation."
    )
    mca: dict[str, str] = Field(default_factory=dict, description="As spec.mca.")
    extra_args: list[str] = Field(default_factory=list, description="As spec.worker.extraMPIArgs.")
    script: list[str] = Field(default_factory=list, description="As spec.worker.cmd.")


def _from_current_shape(
    spec: dict[str, Any], replicas: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """`replicaSpecs` + `mpiConfig` -> `worker`, `mca`, `mpiHome`; worker -> mpi-worker."""
    launcher = replicas.get(LAUNCHER, {}).get("template")
    if launcher:
        raise ValueError(
            "spec.replicaSpecs[launcher].template: the launcher is built from the worker "
            "container; only an empty template ({}) is supported"
        )
    config = spec.pop("mpiConfig", None) or {}
    worker = replicas[WORKER]
    converted: dict[str, Any] = {
        "worker": {
            "replicas": worker.get("replicas", 1),
            "extraMPIArgs": config.get("extraArgs") or [],
            "cmd": config.get("script") or [],
            "template": t9kshape.worker_template(
                worker, container="worker", renamed=WORKER_CONTAINER
            ),
        },
        "mca": config.get("mca") or {},
    }
    if config.get("home"):
        converted["mpiHome"] = config["home"]
    if implementation := config.get("mpiImplementation"):
        if spec.get("mpiImplementation", implementation) != implementation:
            raise ValueError(
                "spec.mpiConfig.mpiImplementation and spec.mpiImplementation differ; give one"
            )
        converted["mpiImplementation"] = implementation
    return converted


class MPIJobSpec(JobSpec):
    """The seed's shape; T9k's current shape (replicaSpecs, mpiConfig) is rewritten into it."""

    model_config = ConfigDict(json_schema_extra=t9kshape.without_required("worker"))

    worker: MPIWorkerSpec = Field(description="The workers, and the MPI program they run.")
    mca: dict[str, str] = Field(
        default_factory=dict,
        description="Open MPI's MCA parameters, passed as `-mca key value`.",
    )
    mpi_implementation: Implementation = Field(
        default="OpenMPI",
        alias="mpiImplementation",
        description="The MPI the image has: OpenMPI (mpirun), or MPICH or IntelMPI (Hydra's "
        "mpiexec); Intel is accepted for IntelMPI, as Kubeflow spells it.",
    )
    mpi_home: str | None = Field(
        default=None,
        alias="mpiHome",
        description="The MPI's install prefix: its bin/ goes first on the launcher's PATH, "
        "and Open MPI also gets it as `mpirun --prefix`.",
    )
    ssh: MPIJobSSHSpec = Field(default_factory=MPIJobSSHSpec, description="sshd and key locations.")
    transport: Transport = Field(
        default="ssh",
        description="How the launcher reaches the workers: ssh (the workers run spec.ssh's "
        "sshd) or agent (jobcore's agent, copied into the pods by the controller: the image "
        "needs no sshd, and spec.ssh is not used).",
    )
    replica_specs: list[t9kshape.ReplicaSpec] | None = Field(
        default=None,
        description="T9k's current shape: a worker entry (container named worker) and an "
        "optional launcher entry with an empty template; use instead of spec.worker.",
    )
    mpi_config: MPIConfig | None = Field(
        default=None,
        description="T9k's current shape of spec.mca, spec.mpiHome and the "
        "worker's extraMPIArgs and cmd.",
    )

    @model_validator(mode="before")
    @classmethod
    def _current_shape(cls, data: Any) -> Any:
        return t9kshape.rewrite(
            data,
            current=("replicaSpecs", "mpiConfig"),
            seed=("worker", "mca", "mpiHome"),
            convert=_from_current_shape,
        )
