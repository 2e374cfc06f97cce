"""The ColossalAIJob kind: workers running sshd, and a launcher that runs `colossalai run`.

The API is the seed shape of T9k's `batch.tensorstack.dev/v1beta1` ColossalAIJob (spec.ssh,
spec.launcher, spec.worker). The launcher is created only once every worker is Ready, and
waits again for each worker to resolve and accept ssh (the wait MPIJob uses), then runs
`colossalai run --hostfile ... --nproc_per_node <procPerWorker> --master_addr <worker-0>
--master_port 29500 [--extra_launch_args <torchArgs>] -- <command>`. `colossalai run`
cannot re-admit a restarted worker, so workers never restart and any worker that stops fails
the job; the launcher's exit code decides otherwise.
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
from jobcore.launcher import SSH_PORT
from jobcore.launcher import SSH_VOLUME
from jobcore.launcher import LauncherWorkersKind
from jobcore.launcher import SSHDPath
from jobcore.launcher import SSHPort
from jobcore.launcher import WorkerCount
from jobcore.launcher import container_errors
from jobcore.launcher import env_name_errors
from jobcore.launcher import headless_service
from jobcore.launcher import job_name_errors
from jobcore.launcher import job_ssh
from jobcore.launcher import launcher_due
from jobcore.launcher import mount_errors
from jobcore.launcher import path_errors
from jobcore.launcher import worker_name
from jobkinds import _colossalai as _cai
from jobkinds import _t9kshape
from jobkinds._colossalai import WORKER_CONTAINER


class ColossalAISSHSpec(ApiModel):
    """Where sshd is in the worker image, where the job's ssh keys are mounted, and its port."""

    auth_mount_path: str = Field(
        default="/root/.ssh",
        description="Where the job's ssh keys are mounted, in launcher and workers: the "
        "~/.ssh of the user running colossalai (it reads its keys from there).",
    )
    sshd_path: SSHDPath = "/usr/sbin/sshd"
    ssh_auth_mount_path: str | None = Field(
        default=None, description="T9k's current shape's name for authMountPath."
    )
    port: SSHPort = SSH_PORT

    @model_validator(mode="before")
    @classmethod
    def _current_name(cls, data: Any) -> Any:
        """Read `sshAuthMountPath` (T9k's current shape) as `authMountPath`."""
        if not isinstance(data, dict) or "sshAuthMountPath" not in data:
            return data
        data = dict(data)
        current = data.pop("sshAuthMountPath")
        if data.setdefault("authMountPath", current) != current:
            raise ValueError("spec.ssh.sshAuthMountPath and spec.ssh.authMountPath differ")
        return data


class LauncherSpec(ApiModel):
    """The launcher pod that runs `colossalai run`."""

    image: str = Field(min_length=1, description="Image of the launcher; needs colossalai.")
    working_dir: str | None = Field(
        default=None,
        description="The launcher's working directory; colossalai run starts the training "
        "script in the same directory on every worker.",
    )
    env: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Launcher environment (Kubernetes EnvVar list); colossalai run passes "
        "its environment on to the training processes.",
    )
    resources: dict[str, Any] | None = Field(
        default=None, description="The launcher container's resource requests and limits."
    )


class ColossalAIWorkerSpec(ApiModel):
    """The workers, and the training script torchrun starts on each."""

    replicas: WorkerCount = Field(default=1, description="Number of worker pods.")
    proc_per_worker: int = Field(
        default=1, ge=1, description="Training processes per worker (--nproc_per_node)."
    )
    command: list[str] = Field(
        min_length=1, description="The training script (a .py file) and its arguments."
    )
    torch_args: list[str] = Field(
        default_factory=list,
        description="torchrun options, each --name=value or --name; passed as "
        "`--extra_launch_args name=value,name`.",
    )
    template: PodTemplateSpec = Field(
        description="Pod template of the workers; needs a container named worker, whose "
        "command and args are replaced by sshd. restartPolicy is always Never."
    )


class TorchConfig(ApiModel):
    """T9k's current shape of the worker's run settings; rewritten into spec.worker."""

    proc_per_worker: int | None = Field(default=None, ge=1, description="As procPerWorker.")
    script: list[str] = Field(default_factory=list, description="As spec.worker.command.")
    extra_args: list[str] = Field(default_factory=list, description="As spec.worker.torchArgs.")


class ColossalAIJobSpec(JobSpec):
    """The seed's shape; T9k's current shape (replicaSpecs, torchConfig) is rewritten into it."""

    model_config = ConfigDict(json_schema_extra=_t9kshape.without_required("launcher", "worker"))

    ssh: ColossalAISSHSpec = Field(
        default_factory=ColossalAISSHSpec, description="sshd and key locations."
    )
    launcher: LauncherSpec = Field(description="The pod that runs colossalai run.")
    worker: ColossalAIWorkerSpec = Field(description="The workers, and the script they run.")
    replica_specs: list[_t9kshape.ReplicaSpec] | None = Field(
        default=None,
        description="T9k's current shape: a worker entry and a launcher entry whose template "
        "({} for defaults) holds a container named launcher; use instead of spec.worker.",
    )
    torch_config: TorchConfig | None = Field(
        default=None,
        description="T9k's current shape of the worker's procPerWorker, command and torchArgs.",
    )

    @model_validator(mode="before")
    @classmethod
    def _current_shape(cls, data: Any) -> Any:
        return _t9kshape.rewrite(
            data,
            current=("replicaSpecs", "torchConfig"),
            seed=("worker", "launcher"),
            convert=_cai.from_current_shape,
        )


class ColossalAIJobKind(LauncherWorkersKind):
    """ColossalAIJob: see the module docstring; satisfies `jobcore.JobKind[ColossalAIJobSpec]`."""

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
                volumes=(SSH_VOLUME, _cai.HOSTFILE_VOLUME),
                mount_paths={auth_mount_path},
                message="is where the job mounts its ssh keys (spec.ssh.authMountPath)",
            ),
        ]

    def render(self, job: Job[ColossalAIJobSpec], observed: Observed) -> list[Object]:
        """Secret, hostfile, Service, workers, then the launcher once every worker is Ready.

        An existing ssh Secret is returned as observed (see `job_ssh`); the launcher as
        `launcher_due` says.
        """
        # colossalai run's fabric accepts any host key: see `SSHAccess.tunnel`.
        secret, ssh = job_ssh(
            job,
            observed,
            mount_path=job.spec.ssh.auth_mount_path,
            port=job.spec.ssh.port,
            tunnel=True,
        )
        children = [secret, _cai.hostfile_configmap(job), headless_service(job, ssh.port)]
        children += [_cai.worker_pod(job, i, ssh) for i in range(job.spec.worker.replicas)]
        if launcher_due(job, observed):
            children.append(_cai.launcher_pod(job, ssh))
        return children


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
    if spec.ssh.auth_mount_path.rstrip("/") == _cai.HOSTFILE_DIR:
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
        if problem := _cai.torch_arg_error(arg):
            errors.append(FieldError(f"spec.worker.torchArgs[{i}]", problem))
    # colossalai run exports its environment on every worker as `export NAME="value"`.
    return errors + env_name_errors(spec.launcher.env, "spec.launcher.env", reader="colossalai run")
