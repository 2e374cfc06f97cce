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

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ConfigDict, Field, model_validator

from jobcore import (
    CONFIGMAPS,
    PODS,
    SECRETS,
    SERVICES,
    ApiModel,
    FieldError,
    Job,
    JobSpec,
    Object,
    Observed,
    Outcome,
    PodTemplateSpec,
    Resource,
)
from jobkinds import _colossalai as _cai
from jobkinds import _ssh, _t9kshape
from jobkinds._colossalai import (
    LAUNCHER,
    LAUNCHER_CONTAINER,
    WORKER,
    WORKER_CONTAINER,
    launcher_name,
    ssh_secret_name,
    worker_name,
)

_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_CONTAINERS = "spec.worker.template.spec.containers"


class ColossalAISSHSpec(ApiModel):
    auth_mount_path: str = Field(
        default="/root/.ssh",
        description="Where the job's ssh keys are mounted, in launcher and workers: the "
        "~/.ssh of the user running colossalai (it reads its keys from there).",
    )
    sshd_path: str = Field(
        default="/usr/sbin/sshd", description="Absolute path of sshd in the worker image."
    )


class LauncherSpec(ApiModel):
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
    replicas: int = Field(default=1, ge=1, description="Number of worker pods.")
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


class ColossalAIJobKind:
    """ColossalAIJob: see the module docstring; satisfies `jobcore.JobKind[ColossalAIJobSpec]`."""

    resource: Resource = Resource(
        "batch.tensorstack.dev", "v1beta1", "ColossalAIJob", "colossalaijobs"
    )
    short_names: Sequence[str] = ("caj", "colossalai")
    spec_model: type[ColossalAIJobSpec] = ColossalAIJobSpec
    replica_types: Sequence[str] = (LAUNCHER, WORKER)
    child_resources: Sequence[Resource] = (SECRETS, CONFIGMAPS, SERVICES, PODS)
    kept_after_cleanup: Sequence[str] = (LAUNCHER,)
    printer_columns: Sequence[Mapping[str, Any]] = (
        {"name": "Workers", "type": "integer", "jsonPath": ".spec.worker.replicas"},
    )

    def validate(self, job: Job[ColossalAIJobSpec]) -> list[FieldError]:
        """What the schema cannot say and would otherwise fail at pod creation or in colossalai."""
        return [
            *_name_errors(job),
            *_container_errors(job.spec),
            *_path_errors(job.spec),
            *_launch_errors(job.spec),
            *_mount_errors(job.spec),
            *_run_mode_errors(job.spec),
        ]

    def replicas(self, job: Job[ColossalAIJobSpec]) -> Mapping[str, int]:
        return {LAUNCHER: 1, WORKER: job.spec.worker.replicas}

    def render(self, job: Job[ColossalAIJobSpec], observed: Observed) -> list[Object]:
        """Secret, hostfile, Service, workers, then the launcher once every worker is Ready.

        An existing ssh Secret is returned as observed (a new keypair would lock the launcher
        out); an existing launcher is always returned, so it is never deleted because a worker
        stopped being Ready. In debug mode the launcher does not wait; a paused job has no pods.
        """
        secret = observed.get(SECRETS, ssh_secret_name(job)) or _ssh.ssh_secret(
            job, ssh_secret_name(job)
        )
        children = [secret, _cai.hostfile_configmap(job), _cai.service(job)]
        if _cai.paused(job):
            return children
        workers = [_cai.worker_pod(job, i) for i in range(job.spec.worker.replicas)]
        children += workers
        if (
            observed.get(PODS, launcher_name(job)) is not None
            or _cai.debugging(job)
            or all(_is_ready(observed.get(PODS, w["metadata"]["name"])) for w in workers)
        ):
            children.append(_cai.launcher_pod(job))
        return children

    def interpret(self, job: Job[ColossalAIJobSpec], observed: Observed) -> Outcome:
        """The launcher's exit decides; a worker that stops first fails the job."""
        if _cai.paused(job):
            return Outcome("pending", "Paused", "The job is paused: its pods are deleted.")
        launcher = observed.get(PODS, launcher_name(job))
        names = [worker_name(job, i) for i in range(job.spec.worker.replicas)]
        workers = {name: observed.get(PODS, name) for name in names}
        launcher_phase = _phase(launcher)
        if launcher_phase == "Succeeded":
            return Outcome("succeeded", "Succeeded", "The job has finished successfully.")
        failures = []
        if launcher is not None and launcher_phase == "Failed":
            failures.append(_failure(launcher, LAUNCHER_CONTAINER))
        failures += [
            _failure(pod, WORKER_CONTAINER)
            for pod in workers.values()
            if pod is not None and _phase(pod) in ("Succeeded", "Failed")
        ]
        if failures:
            message = (
                "The job exited with an error code."
                if launcher_phase == "Failed"
                else "A worker stopped before the launcher finished."
            )
            return Outcome("failed", "Failed", message, replica_failure=_summary(failures))
        problems = [
            problem
            for pod in (launcher, *workers.values())
            if pod is not None and (problem := _problem(pod))
        ]
        replica_failure = _summary(problems) if problems else None
        if launcher_phase == "Running":
            return Outcome("running", replica_failure=replica_failure)
        if launcher is not None:
            reason, message = "LauncherPending", "Waiting for the launcher to start."
        elif missing := [name for name, pod in workers.items() if pod is None]:
            reason = "WorkersCreating"
            message = f"Waiting for {len(missing)} worker(s) to be created: {_names(missing)}."
        elif unready := [name for name, pod in workers.items() if not _is_ready(pod)]:
            reason = "WorkersNotReady"
            message = (
                f"Waiting for {len(unready)} of {len(names)} worker(s) to become Ready "
                f"(sshd accepting connections on port 22): {_names(unready)}."
            )
        else:
            reason, message = "LauncherCreating", "All workers are Ready; creating the launcher."
        return Outcome("pending", reason, message, replica_failure=replica_failure)


def _names(names: Sequence[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


# Validation ------------------------------------------------------------------------------


def _name_errors(job: Job[ColossalAIJobSpec]) -> list[FieldError]:
    """The job name names a Service (DNS-1035 label) and prefixes worker hostnames (<= 63)."""
    errors = []
    if not _DNS1035_LABEL.fullmatch(job.name):
        errors.append(
            FieldError(
                "metadata.name",
                "must be a DNS-1035 label (lowercase letters, digits and '-', starting with a "
                "letter): it names the workers' headless Service",
            )
        )
    longest = worker_name(job, job.spec.worker.replicas - 1)
    if len(longest) > 63:
        errors.append(
            FieldError("metadata.name", f"is too long: worker hostname {longest!r} exceeds 63")
        )
    return errors


def _worker_container(spec: ColossalAIJobSpec) -> int | None:
    containers = spec.worker.template.spec.containers
    return next((i for i, c in enumerate(containers) if c.name == WORKER_CONTAINER), None)


def _container_errors(spec: ColossalAIJobSpec) -> list[FieldError]:
    index = _worker_container(spec)
    if index is None:
        return [FieldError(_CONTAINERS, f'needs a container named "{WORKER_CONTAINER}"')]
    if not spec.worker.template.spec.containers[index].image:
        return [FieldError(f"{_CONTAINERS}[{index}].image", "is required")]
    return []


def _path_errors(spec: ColossalAIJobSpec) -> list[FieldError]:
    """sshd must be run by absolute path; the mount path also lands in sshd's options."""
    paths = {
        "spec.ssh.sshdPath": spec.ssh.sshd_path,
        "spec.ssh.authMountPath": spec.ssh.auth_mount_path,
    }
    errors = [
        FieldError(field, f"must be an absolute path without spaces, got {path!r}")
        for field, path in paths.items()
        if not path.startswith("/") or any(c.isspace() for c in path)
    ]
    if spec.ssh.auth_mount_path.rstrip("/") == _cai.HOSTFILE_DIR:
        errors.append(FieldError("spec.ssh.authMountPath", "is where the hostfile is mounted"))
    return errors


def _launch_errors(spec: ColossalAIJobSpec) -> list[FieldError]:
    """What `colossalai run` would reject, some of it with exit code 0 (a false success)."""
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
    return errors


def _mount_errors(spec: ColossalAIJobSpec) -> list[FieldError]:
    """Our volume and mount must not collide with the template's: the pod would be invalid."""
    pod = spec.worker.template.spec
    errors = [
        FieldError(f"spec.worker.template.spec.volumes[{i}].name", "is reserved")
        for i, volume in enumerate(pod.volumes or ())
        if volume.get("name") in (_cai.SSH_VOLUME, _cai.HOSTFILE_VOLUME)
    ]
    index = _worker_container(spec)
    if index is not None:
        errors += [
            FieldError(
                f"{_CONTAINERS}[{index}].volumeMounts[{i}].mountPath",
                "is where the job mounts its ssh keys (spec.ssh.authMountPath)",
            )
            for i, mount in enumerate(pod.containers[index].volume_mounts or ())
            if str(mount.get("mountPath", "")).rstrip("/") == spec.ssh.auth_mount_path.rstrip("/")
        ]
    return errors


def _run_mode_errors(spec: ColossalAIJobSpec) -> list[FieldError]:
    mode = spec.run_mode
    entries: list[tuple[str, str]] = []
    if mode and mode.debug:
        entries += [
            (f"spec.runMode.debug.replicaSpecs[{i}].type", r.type)
            for i, r in enumerate(mode.debug.replica_specs or ())
        ]
    if mode and mode.pause:
        entries += [
            (f"spec.runMode.pause.resumeSpecs[{i}].type", r.type)
            for i, r in enumerate(mode.pause.resume_specs or ())
        ]
    return [
        FieldError(path, f"must be {LAUNCHER!r} or {WORKER!r}, got {value!r}")
        for path, value in entries
        if value not in (LAUNCHER, WORKER)
    ]


# Pod status ------------------------------------------------------------------------------

_WAITING_ERRORS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "CrashLoopBackOff",
    }
)
"""Waiting reasons that need the user: the pod will not get further on its own."""


def _phase(pod: Object | None) -> str | None:
    return None if pod is None else (pod.get("status") or {}).get("phase")


def _is_ready(pod: Object | None) -> bool:
    if pod is None or pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _statuses(pod: Object) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failure(pod: Object, container: str) -> str:
    """`Pod[name] exited with error code N (reason): last message line`, as T9k words it."""
    name = pod["metadata"]["name"]
    status = pod.get("status") or {}
    ended = [
        (s.get("name"), s["state"]["terminated"])
        for s in _statuses(pod)
        if "terminated" in (s.get("state") or {})
    ]
    main = next((t for n, t in ended if n == container), None)
    failed = next((t for _, t in ended if t.get("exitCode")), None)
    terminated = main if main and main.get("exitCode") else failed or main
    pod_reason = status.get("reason")
    if terminated is None or terminated.get("exitCode") is None:
        text = f"Pod[{name}] failed" + (f": {pod_reason}" if pod_reason else "")
    elif terminated["exitCode"] == 0:
        text = f"Pod[{name}] exited with code 0 before the launcher finished"
    else:
        text = f"Pod[{name}] exited with error code {terminated['exitCode']}"
        notes = [r for r in (terminated.get("reason"), pod_reason) if r and r != "Error"]
        if notes:
            text += f" ({', '.join(dict.fromkeys(notes))})"
    detail = str(status.get("message") or (terminated or {}).get("message") or "")
    lines = [line.strip() for line in detail.splitlines() if any(c.isalnum() for c in line)]
    return _clip(f"{text}: {lines[-1]}" if lines else text)


def _problem(pod: Object) -> str | None:
    """Why a pod that has not failed is stuck, if it needs the user: image, config, scheduling."""
    name = pod["metadata"]["name"]
    for status in _statuses(pod):
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in _WAITING_ERRORS:
            detail = f": {waiting['message']}" if waiting.get("message") else ""
            return _clip(
                f"Pod[{name}] container {status.get('name')} is waiting: "
                f"{waiting['reason']}{detail}"
            )
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return _clip(f"Pod[{name}] is unschedulable: {condition.get('message', '')}")
    return None


def _summary(items: Sequence[str], shown: int = 3) -> str:
    more = f"; and {len(items) - shown} more" if len(items) > shown else ""
    return "; ".join(items[:shown]) + more
