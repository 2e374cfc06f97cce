"""The MPIJob kind: workers running sshd, and a launcher that runs mpirun (or mpiexec) over ssh.

The API is T9k's `batch.tensorstack.dev/v1beta1` MPIJob (spec.worker, spec.mca, spec.mpiHome,
spec.ssh), plus spec.mpiImplementation: Open MPI (the default), or the Hydra-based MPICH and
Intel MPI. The launcher is created only once every worker is Ready, and its script waits
again for each worker to resolve and accept ssh: the start-up race is the most reported bug of
the Kubeflow MPI Operator. The controller sees only the launcher's exit, so Succeeded means
"mpirun exited 0", as T9k documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict
from pydantic import Field
from pydantic import model_validator

from jobcore import Object
from jobcore import Resource
from jobcore.jobs import ApiModel
from jobcore.jobs import FieldError
from jobcore.jobs import Job
from jobcore.jobs import JobSpec
from jobcore.jobs import Observed
from jobcore.jobs import PodTemplateSpec
from jobcore.launcher import LAUNCHER
from jobcore.launcher import SSH_PORT
from jobcore.launcher import SSH_VOLUME
from jobcore.launcher import WORKER
from jobcore.launcher import LauncherWorkersKind
from jobcore.launcher import SSHDPath
from jobcore.launcher import SSHPort
from jobcore.launcher import WorkerCount
from jobcore.launcher import container_errors
from jobcore.launcher import job_name_errors
from jobcore.launcher import job_ssh
from jobcore.launcher import launcher_due
from jobcore.launcher import mount_errors
from jobcore.launcher import path_errors
from jobcore.launcher import template_container
from jobcore.launcher import worker_name
from jobkinds import _checks
from jobkinds import _mpi
from jobkinds import _mpiargs
from jobkinds import _t9kshape
from jobkinds._mpi import HOSTFILE_VOLUME
from jobkinds._mpi import LAUNCHER_CONTAINER
from jobkinds._mpi import WORKER_CONTAINER


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


class SSHSpec(ApiModel):
    """Where sshd is in the worker image, where the job's ssh keys are mounted, and its port."""

    sshd_path: SSHDPath = "/usr/sbin/sshd"
    ssh_auth_mount_path: str = Field(
        default="/root/.ssh",
        description="Where the job's ssh keys are mounted: the ~/.ssh of the user running MPI.",
    )
    port: SSHPort = SSH_PORT


class MPIConfig(ApiModel):
    """T9k's current shape of the MPI settings; rewritten into worker, mca and mpiHome."""

    home: str | None = Field(default=None, description="As spec.mpiHome.")
    mpi_implementation: _mpi.Implementation | None = Field(
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
            "template": _t9kshape.worker_template(
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

    model_config = ConfigDict(json_schema_extra=_t9kshape.without_required("worker"))

    worker: MPIWorkerSpec = Field(description="The workers, and the MPI program they run.")
    mca: dict[str, str] = Field(
        default_factory=dict,
        description="Open MPI's MCA parameters, passed as `-mca key value`.",
    )
    mpi_implementation: _mpi.Implementation = Field(
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
    ssh: SSHSpec = Field(default_factory=SSHSpec, description="sshd and key locations.")
    replica_specs: list[_t9kshape.ReplicaSpec] | None = Field(
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
        return _t9kshape.rewrite(
            data,
            current=("replicaSpecs", "mpiConfig"),
            seed=("worker", "mca", "mpiHome"),
            convert=_from_current_shape,
        )


class MPIJobKind(LauncherWorkersKind):
    """MPIJob: see the module docstring; satisfies `jobcore.JobKind[MPIJobSpec]`."""

    resource: Resource = Resource("batch.tensorstack.dev", "v1beta1", "MPIJob", "mpijobs")
    short_names: Sequence[str] = ("mj", "mpij")
    spec_model: type[MPIJobSpec] = MPIJobSpec
    containers: Mapping[str, str] = {LAUNCHER: LAUNCHER_CONTAINER, WORKER: WORKER_CONTAINER}

    def validate(self, job: Job[MPIJobSpec]) -> list[FieldError]:
        """What the schema cannot say and would otherwise fail at pod creation or in mpirun."""
        spec = job.spec
        current_shape = "mpiConfig" in (job.obj.get("spec") or {})
        return [
            *job_name_errors(job, worker_name(job, spec.worker.replicas - 1)),
            *container_errors(spec, WORKER_CONTAINER),
            # sshd runs by absolute path; the mount path lands in ssh's options and mpiHome
            # in the command Open MPI's and Hydra's daemons are started with over ssh.
            *path_errors(
                {
                    "spec.ssh.sshdPath": spec.ssh.sshd_path,
                    "spec.ssh.sshAuthMountPath": spec.ssh.ssh_auth_mount_path,
                    "spec.mpiConfig.home" if current_shape else "spec.mpiHome": spec.mpi_home,
                }
            ),
            *_mpirun_errors(spec),
            *_open_mpi_shell_errors(spec),
            *mount_errors(
                spec,
                container=WORKER_CONTAINER,
                volumes=(SSH_VOLUME, HOSTFILE_VOLUME),
                mount_paths={spec.ssh.ssh_auth_mount_path.rstrip("/"), _mpi.HOSTFILE_DIR},
                message="is where the job mounts its ssh keys or hostfile",
            ),
        ]

    def render(self, job: Job[MPIJobSpec], observed: Observed) -> list[Object]:
        """Secret, hostfile, Service, workers, then the launcher once every worker is Ready.

        An existing ssh Secret is returned as observed (see `job_ssh`); the launcher as
        `launcher_due` says.
        """
        secret, ssh = job_ssh(
            job, observed, mount_path=job.spec.ssh.ssh_auth_mount_path, port=job.spec.ssh.port
        )
        children = [secret, _mpi.hostfile_configmap(job), _mpi.service(job)]
        children += [_mpi.worker_pod(job, i, ssh) for i in range(job.spec.worker.replicas)]
        if launcher_due(job, observed):
            children.append(_mpi.launcher_pod(job, ssh))
        return children


# Validation helpers ----------------------------------------------------------------------


def _mpirun_errors(spec: MPIJobSpec) -> list[FieldError]:
    """MCA names, per-node counts, and flags the launcher sets itself or does not understand."""
    mpi = _mpi.flavour(spec.mpi_implementation)
    path = "spec.worker.extraMPIArgs"
    args = spec.worker.extra_mpi_args
    flags = {arg.partition("=")[0] for arg in args}
    errors = [FieldError(path, error) for error in _mpi.npernode_errors(args, mpi)]
    errors += [
        FieldError(path, f"{flag}: the launcher passes the workers' hostfile itself")
        for flag in mpi.hostfile_flags
        if flag in flags
    ]
    if not mpi.open_mpi:
        only_open_mpi = f"is Open MPI's; {mpi.name} does not understand it"
        if spec.mca:
            errors.append(FieldError("spec.mca", f"MCA {only_open_mpi}"))
        if "--prefix" in flags:
            errors.append(
                FieldError(path, f"--prefix {only_open_mpi}; spec.mpiHome sets the prefix")
            )
        return errors
    errors += [
        FieldError(f"spec.mca.{key}", "is not an MCA parameter name ([A-Za-z0-9_]+)")
        for key in spec.mca
        if not _checks.MCA_NAME.fullmatch(key)
    ]
    if spec.mpi_home is not None and "--prefix" in flags:
        errors.append(FieldError(path, "--prefix: spec.mpiHome sets it already"))
    return errors


def _open_mpi_shell_errors(spec: MPIJobSpec) -> list[FieldError]:
    """What Open MPI would copy into the shell command that starts its daemons on the workers:
    MCA values (spec.mca, the flags of extraMPIArgs, MCA variables of the mpi-worker
    container's env), `--prefix` and launch agents in extraMPIArgs, and mpirun's working
    directory (an MCA value once `-am` or `--tune` is given)."""
    if not _mpi.flavour(spec.mpi_implementation).open_mpi:
        return []
    errors = [
        FieldError(f"spec.mca.{key}", problem)
        for key, value in spec.mca.items()
        if (problem := _checks.mca_value_error(value))
    ]
    errors += [
        FieldError("spec.worker.extraMPIArgs", problem)
        for problem in _mpiargs.remote_shell_errors(spec.worker.extra_mpi_args)
    ]
    if found := template_container(spec, WORKER_CONTAINER):
        path, container = found
        errors += _checks.open_mpi_env_errors(container.env or (), f"{path}.env")
        if container.working_dir and (problem := _checks.mca_value_error(container.working_dir)):
            errors.append(FieldError(f"{path}.workingDir", problem))
    return errors
