"""The MPIJob kind: validation, and the children rendered from what is observed."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

from jobcore import Object
from jobcore import Resource
from jobcore.jobs import FieldError
from jobcore.jobs import Job
from jobcore.jobs import Observed
from jobcore.jobs import container_errors
from jobcore.jobs import job_name_errors
from jobcore.jobs import worker_name
from jobcore.launcher import LAUNCHER
from jobcore.launcher import SSH_VOLUME
from jobcore.launcher import WORKER
from jobcore.launcher import LauncherWorkersKind
from jobcore.launcher import job_ssh
from jobcore.launcher import launch_children
from jobcore.launcher import mount_errors
from jobcore.launcher import path_errors
from jobcore.launcher import template_container
from jobkinds.mpi.flavours import flavour
from jobkinds.mpi.flavours import npernode_errors
from jobkinds.mpi.flavours import slots
from jobkinds.mpi.flavours import workers_needed
from jobkinds.mpi.mpirun import HOSTFILE_DIR
from jobkinds.mpi.openmpi import MCA_NAME
from jobkinds.mpi.openmpi import mca_value_error
from jobkinds.mpi.openmpi import open_mpi_env_errors
from jobkinds.mpi.openmpi import remote_shell_errors
from jobkinds.mpijob.children import HOSTFILE_VOLUME
from jobkinds.mpijob.children import hostfile_configmap
from jobkinds.mpijob.children import launcher_pod
from jobkinds.mpijob.children import worker_pod
from jobkinds.mpijob.spec import LAUNCHER_CONTAINER
from jobkinds.mpijob.spec import WORKER_CONTAINER
from jobkinds.mpijob.spec import MPIJobSpec


class MPIJobKind(LauncherWorkersKind):
    """MPIJob: see the package docstring; satisfies `jobcore.JobKind[MPIJobSpec]`."""

    resource: Resource = Resource("batch.tensorstack.dev", "v1beta1", "MPIJob", "mpijobs")
    short_names: Sequence[str] = ("mj", "mpij")
    spec_model: type[MPIJobSpec] = MPIJobSpec
    containers: Mapping[str, str] = {LAUNCHER: LAUNCHER_CONTAINER, WORKER: WORKER_CONTAINER}

    def _needs_workers(self, job: Job[MPIJobSpec]) -> int | None:
        """As many workers as hold the ranks extraMPIArgs ask for at their slots; every one if
        it sets no count (`workers_needed`)."""
        args = job.spec.worker.extra_mpi_args
        per_worker = slots(args, flavour(job.spec.mpi_implementation))
        return workers_needed(args, job.spec.worker.replicas, per_worker)

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
                mount_paths={spec.ssh.ssh_auth_mount_path.rstrip("/"), HOSTFILE_DIR},
                message="is where the job mounts its ssh keys or hostfile",
            ),
        ]

    def render(self, job: Job[MPIJobSpec], observed: Observed) -> list[Object]:
        """The ssh Secret (an existing one as observed: see `job_ssh`), the hostfile, then
        the Service, the workers and the launcher (`launch_children`)."""
        secret, ssh = job_ssh(job, observed, mount_path=job.spec.ssh.ssh_auth_mount_path)
        workers = [worker_pod(job, i, ssh) for i in range(job.spec.worker.replicas)]
        head = [secret, hostfile_configmap(job)]
        return launch_children(job, observed, head, workers, lambda: launcher_pod(job, ssh))


# Validation helpers ----------------------------------------------------------------------


def _mpirun_errors(spec: MPIJobSpec) -> list[FieldError]:
    """MCA names, per-node counts, and flags the launcher sets itself or does not understand."""
    mpi = flavour(spec.mpi_implementation)
    path = "spec.worker.extraMPIArgs"
    args = spec.worker.extra_mpi_args
    flags = {arg.partition("=")[0] for arg in args}
    errors = [FieldError(path, error) for error in npernode_errors(args, mpi)]
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
        if not MCA_NAME.fullmatch(key)
    ]
    if spec.mpi_home is not None and "--prefix" in flags:
        errors.append(FieldError(path, "--prefix: spec.mpiHome sets it already"))
    return errors


def _open_mpi_shell_errors(spec: MPIJobSpec) -> list[FieldError]:
    """What Open MPI would copy into the shell command that starts its daemons on the workers:
    MCA values (spec.mca, the flags of extraMPIArgs, MCA variables of the mpi-worker
    container's env), `--prefix` and launch agents in extraMPIArgs, and mpirun's working
    directory (an MCA value once `-am` or `--tune` is given)."""
    if not flavour(spec.mpi_implementation).open_mpi:
        return []
    errors = [
        FieldError(f"spec.mca.{key}", problem)
        for key, value in spec.mca.items()
        if (problem := mca_value_error(value))
    ]
    errors += [
        FieldError("spec.worker.extraMPIArgs", problem)
        for problem in remote_shell_errors(spec.worker.extra_mpi_args)
    ]
    if found := template_container(spec, WORKER_CONTAINER):
        path, container = found
        errors += open_mpi_env_errors(container.env or (), f"{path}.env")
        if container.working_dir and (problem := mca_value_error(container.working_dir)):
            errors.append(FieldError(f"{path}.workingDir", problem))
    return errors
