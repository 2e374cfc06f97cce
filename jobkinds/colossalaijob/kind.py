"""The ColossalAIJob kind: validation, and the children rendered from what is observed."""

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
from jobcore.launcher import SSH_VOLUME
from jobcore.launcher import LauncherWorkersKind
from jobcore.launcher import env_name_errors
from jobcore.launcher import job_ssh
from jobcore.launcher import launch_children
from jobcore.launcher import mount_errors
from jobcore.launcher import path_errors
from jobkinds.colossalaijob.children import HOSTFILE_DIR
from jobkinds.colossalaijob.children import HOSTFILE_VOLUME
from jobkinds.colossalaijob.children import hostfile_configmap
from jobkinds.colossalaijob.children import launcher_pod
from jobkinds.colossalaijob.children import torch_arg_error
from jobkinds.colossalaijob.children import worker_pod
from jobkinds.colossalaijob.spec import WORKER_CONTAINER
from jobkinds.colossalaijob.spec import ColossalAIJobSpec


class ColossalAIJobKind(LauncherWorkersKind):
    """ColossalAIJob: see the package docstring; satisfies `jobcore.JobKind[ColossalAIJobSpec]`."""

    resource: Resource = Resource(
        "batch.tensorstack.dev", "v1beta1", "ColossalAIJob", "colossalaijobs"
    )
    short_names: Sequence[str] = ("caj", "colossalai")
    spec_model: type[ColossalAIJobSpec] = ColossalAIJobSpec
    debug_commands: Mapping[str, Sequence[str] | None] = {}  # T9k: sleep inf for both

    def validate(self, job: Job[ColossalAIJobSpec]) -> list[FieldError]:
        """What the schema cannot say and would otherwise fail at pod creation or in colossalai."""
        spec = job.spec
        longest = worker_name(job, spec.worker.replicas - 1)
        auth_mount_path = spec.ssh.auth_mount_path.rstrip("/")
        return [
            *job_name_errors(job, longest, exceeds="63"),
            *container_errors(spec, WORKER_CONTAINER),
            *_path_errors(spec),
            *_launch_errors(spec),
            *mount_errors(
                spec,
                container=WORKER_CONTAINER,
                volumes=(SSH_VOLUME, HOSTFILE_VOLUME),
                mount_paths={auth_mount_path},
                message="is where the job mounts its ssh keys (spec.ssh.authMountPath)",
            ),
        ]

    def render(self, job: Job[ColossalAIJobSpec], observed: Observed) -> list[Object]:
        """The ssh Secret (an existing one as observed: see `job_ssh`), the hostfile, then
        the Service, the workers and the launcher (`launch_children`)."""
        # colossalai run's fabric accepts any host key: see `SSHAccess.tunnel`.
        secret, ssh = job_ssh(job, observed, mount_path=job.spec.ssh.auth_mount_path, tunnel=True)
        workers = [worker_pod(job, i, ssh) for i in range(job.spec.worker.replicas)]
        head = [secret, hostfile_configmap(job)]
        return launch_children(job, observed, head, workers, lambda: launcher_pod(job, ssh))


# Validation ------------------------------------------------------------------------------


def _path_errors(spec: ColossalAIJobSpec) -> list[FieldError]:
    """sshd runs by absolute path; the mount path lands in sshd's options; colossalai run
    sends `cd <its working directory>` to every worker's shell, escaping only spaces."""
    errors = path_errors(
        {
            "spec.ssh.sshdPath": spec.ssh.sshd_path,
            "spec.ssh.authMountPath": spec.ssh.auth_mount_path,
            "spec.launcher.workingDir": spec.launcher.working_dir,
        }
    )
    if spec.ssh.auth_mount_path.rstrip("/") == HOSTFILE_DIR:
        errors.append(FieldError("spec.ssh.authMountPath", "is where the hostfile is mounted"))
    return errors


def _launch_errors(spec: ColossalAIJobSpec) -> list[FieldError]:
    """What `colossalai run` would reject, some of it with exit code 0 (a false success), and
    environment names it would write unquoted into the workers' shell command."""
    errors = []
    if not spec.worker.command[0].endswith(".py"):
        errors.append(
            FieldError(
                "spec.worker.command[0]",
                f"must be the training script, a .py file (colossalai run refuses anything "
                f"else), got {spec.worker.command[0]!r}",
            )
        )
    for i, arg in enumerate(spec.worker.torch_args):
        if problem := torch_arg_error(arg):
            errors.append(FieldError(f"spec.worker.torchArgs[{i}]", problem))
    # colossalai run exports its environment on every worker as `export NAME="value"`.
    return errors + env_name_errors(spec.launcher.env, "spec.launcher.env", reader="colossalai run")
