"""ColossalAIJob's API: T9k's `batch.tensorstack.dev/v1beta1` ColossalAIJob as pydantic models.

The seed's shape (spec.ssh, spec.launcher, spec.worker); T9k's current shape
(spec.replicaSpecs, spec.torchConfig) is rewritten into it (`from_current_shape`).
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
from jobcore.launcher import SSH_PORT
from jobcore.launcher import WORKER
from jobcore.launcher import SSHDPath
from jobcore.launcher import SSHPort
from jobcore.launcher import Transport
from jobcore.launcher import WorkerCount
from jobkinds import t9kshape

WORKER_CONTAINER = WORKER
"""The template's container that runs sshd (T9k: its command is ignored)."""
LAUNCHER_CONTAINER = LAUNCHER


class ColossalAISSHSpec(ApiModel):
    """Where sshd is in the worker image, where the job's ssh keys are mounted, and its port."""

    auth_mount_path: str = Field(
        default=SSH_MOUNT,
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

    image: str = Field(
        min_length=1,
        description="Image of the launcher; needs colossalai (with spec.transport agent, "
        "only /bin/sh).",
    )
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
        "command and args are replaced by sshd (or jobcore's agent). restartPolicy is always "
        "Never."
    )


class TorchConfig(ApiModel):
    """T9k's current shape of the worker's run settings; rewritten into spec.worker."""

    proc_per_worker: int | None = Field(default=None, ge=1, description="As procPerWorker.")
    script: list[str] = Field(default_factory=list, description="As spec.worker.command.")
    extra_args: list[str] = Field(default_factory=list, description="As spec.worker.torchArgs.")


class ColossalAIJobSpec(JobSpec):
    """The seed's shape; T9k's current shape (replicaSpecs, torchConfig) is rewritten into it."""

    model_config = ConfigDict(json_schema_extra=t9kshape.without_required("launcher", "worker"))

    ssh: ColossalAISSHSpec = Field(
        default_factory=ColossalAISSHSpec, description="sshd and key locations."
    )
    transport: Transport = Field(
        default="ssh",
        description="How the launcher reaches the workers: ssh (the workers run spec.ssh's "
        "sshd) or agent (jobcore's agent, copied into the pods by the controller: the image "
        "needs no sshd, and spec.ssh is not used).",
    )
    launcher: LauncherSpec = Field(description="The pod that runs colossalai run.")
    worker: ColossalAIWorkerSpec = Field(description="The workers, and the script they run.")
    replica_specs: list[t9kshape.ReplicaSpec] | None = Field(
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
        return t9kshape.rewrite(
            data,
            current=("replicaSpecs", "torchConfig"),
            seed=("worker", "launcher"),
            convert=from_current_shape,
        )


def from_current_shape(spec: dict[str, Any], replicas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`replicaSpecs` + `torchConfig` -> `worker` and `launcher` (T9k's current shape).

    The launcher entry's `launcher` container gives image, workingDir, env and resources; an
    empty template means the defaults: the worker container's image and workingDir.
    """
    config = spec.pop("torchConfig", None) or {}
    entry = replicas[WORKER]
    template = t9kshape.worker_template(entry, container=WORKER_CONTAINER)
    worker_container: dict[str, Any] = next(
        (c for c in template.get("spec", {}).get("containers") or () if c.get("name") == WORKER),
        {},
    )
    launcher_template = replicas.get(LAUNCHER, {}).get("template") or {}
    launcher_container = next(
        (
            c
            for c in (launcher_template.get("spec") or {}).get("containers") or ()
            if c.get("name") == LAUNCHER
        ),
        None,
    )
    if launcher_template and launcher_container is None:
        raise ValueError(
            "spec.replicaSpecs[launcher].template: needs a container named launcher, or {}"
        )
    source = launcher_container or worker_container
    launcher = {
        key: source[key]
        for key in ("image", "workingDir", "env", "resources")
        if source.get(key) is not None and (launcher_container or key in ("image", "workingDir"))
    }
    worker: dict[str, Any] = {
        "replicas": entry.get("replicas", 1),
        "command": config.get("script") or [],
        "torchArgs": config.get("extraArgs") or [],
        "template": template,
    }
    if config.get("procPerWorker") is not None:
        worker["procPerWorker"] = config["procPerWorker"]
    return {"worker": worker, "launcher": launcher}
