"""The MPIJob kind: Open MPI workers running sshd, and a launcher that runs mpirun over ssh.

The API is T9k's `batch.tensorstack.dev/v1beta1` MPIJob (spec.worker, spec.mca, spec.mpiHome,
spec.ssh). The launcher is created only once every worker is Ready, and its script waits
again for each worker to resolve and accept ssh: the start-up race is the most reported bug of
the Kubeflow MPI Operator. The controller sees only mpirun's exit, so Succeeded means "mpirun
exited 0", as T9k documents.
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
from jobkinds import _mpi, _ssh, _t9kshape
from jobkinds._mpi import (
    HOSTFILE_VOLUME,
    LAUNCHER,
    LAUNCHER_CONTAINER,
    SSH_VOLUME,
    WORKER,
    WORKER_CONTAINER,
    launcher_name,
    ssh_secret_name,
    worker_name,
)

_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_MCA_NAME = re.compile(r"[A-Za-z0-9_]+")
_CONTAINERS = "spec.worker.template.spec.containers"


class MPIWorkerSpec(ApiModel):
    replicas: int = Field(default=1, ge=1, description="Number of worker pods.")
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
    sshd_path: str = Field(
        default="/usr/sbin/sshd", description="Absolute path of sshd in the worker image."
    )
    ssh_auth_mount_path: str = Field(
        default="/root/.ssh",
        description="Where the job's ssh keys are mounted: the ~/.ssh of the user running MPI.",
    )


class MPIConfig(ApiModel):
    """T9k's current shape of the MPI settings; rewritten into worker, mca and mpiHome."""

    home: str | None = Field(default=None, description="As spec.mpiHome.")
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
    return converted


class MPIJobSpec(JobSpec):
    """The seed's shape; T9k's current shape (replicaSpecs, mpiConfig) is rewritten into it."""

    model_config = ConfigDict(json_schema_extra=_t9kshape.without_required("worker"))

    worker: MPIWorkerSpec = Field(description="The workers, and the MPI program they run.")
    mca: dict[str, str] = Field(
        default_factory=dict, description="MCA parameters, passed as `-mca key value`."
    )
    mpi_home: str | None = Field(
        default=None,
        alias="mpiHome",
        description="Open MPI's install prefix, passed as `mpirun --prefix`.",
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


class MPIJobKind:
    """MPIJob: see the module docstring; satisfies `jobcore.JobKind[MPIJobSpec]`."""

    resource: Resource = Resource("batch.tensorstack.dev", "v1beta1", "MPIJob", "mpijobs")
    short_names: Sequence[str] = ("mj", "mpij")
    spec_model: type[MPIJobSpec] = MPIJobSpec
    replica_types: Sequence[str] = (LAUNCHER, WORKER)
    child_resources: Sequence[Resource] = (SECRETS, CONFIGMAPS, SERVICES, PODS)
    kept_after_cleanup: Sequence[str] = (LAUNCHER,)
    printer_columns: Sequence[Mapping[str, Any]] = (
        {"name": "Workers", "type": "integer", "jsonPath": ".spec.worker.replicas"},
    )

    def validate(self, job: Job[MPIJobSpec]) -> list[FieldError]:
        """What the schema cannot say and would otherwise fail at pod creation or in mpirun."""
        return [
            *_name_errors(job),
            *_container_errors(job.spec),
            *_path_errors(job.spec),
            *_mpirun_errors(job.spec),
            *_mount_errors(job.spec),
            *_run_mode_errors(job.spec),
        ]

    def replicas(self, job: Job[MPIJobSpec]) -> Mapping[str, int]:
        return {LAUNCHER: 1, WORKER: job.spec.worker.replicas}

    def render(self, job: Job[MPIJobSpec], observed: Observed) -> list[Object]:
        """Secret, hostfile, Service, workers, then the launcher once every worker is Ready.

        An existing ssh Secret is returned as observed: a new keypair would lock the launcher
        out of running workers. A launcher that exists is always returned, so it is never
        deleted because a worker stopped being Ready. In debug mode the launcher does not wait
        (its command is `sleep inf`); a paused job gets no pods.
        """
        secret = observed.get(SECRETS, ssh_secret_name(job)) or _ssh.ssh_secret(
            job, ssh_secret_name(job)
        )
        children = [secret, _mpi.hostfile_configmap(job), _mpi.service(job)]
        if _mpi.paused(job):
            return children
        workers = [_mpi.worker_pod(job, i) for i in range(job.spec.worker.replicas)]
        children += workers
        launcher_exists = observed.get(PODS, launcher_name(job)) is not None
        if (
            launcher_exists
            or _mpi.debugging(job)
            or all(_is_ready(observed.get(PODS, w["metadata"]["name"])) for w in workers)
        ):
            children.append(_mpi.launcher_pod(job))
        return children

    def interpret(self, job: Job[MPIJobSpec], observed: Observed) -> Outcome:
        """The launcher's exit decides; a worker that stops first fails the job."""
        if _mpi.paused(job):
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
        for pod in workers.values():
            if pod is not None and _phase(pod) in ("Succeeded", "Failed"):
                failures.append(_failure(pod, WORKER_CONTAINER))
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


# Validation helpers ----------------------------------------------------------------------


def _name_errors(job: Job[MPIJobSpec]) -> list[FieldError]:
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
            FieldError(
                "metadata.name",
                f"is too long: worker hostname {longest!r} exceeds 63 characters",
            )
        )
    return errors


def _worker_container(spec: MPIJobSpec) -> int | None:
    containers = spec.worker.template.spec.containers
    return next((i for i, c in enumerate(containers) if c.name == WORKER_CONTAINER), None)


def _container_errors(spec: MPIJobSpec) -> list[FieldError]:
    index = _worker_container(spec)
    if index is None:
        return [FieldError(_CONTAINERS, f'needs a container named "{WORKER_CONTAINER}"')]
    if not spec.worker.template.spec.containers[index].image:
        return [FieldError(f"{_CONTAINERS}[{index}].image", "is required")]
    return []


def _path_errors(spec: MPIJobSpec) -> list[FieldError]:
    """sshd must be run by absolute path; the mount path also lands in ssh's option string."""
    paths = {
        "spec.ssh.sshdPath": spec.ssh.sshd_path,
        "spec.ssh.sshAuthMountPath": spec.ssh.ssh_auth_mount_path,
        "spec.mpiHome": spec.mpi_home,
    }
    return [
        FieldError(field, f"must be an absolute path without spaces, got {path!r}")
        for field, path in paths.items()
        if path is not None and (not path.startswith("/") or any(c.isspace() for c in path))
    ]


def _mpirun_errors(spec: MPIJobSpec) -> list[FieldError]:
    """MCA names, `-N` values, and flags the launcher sets itself."""
    errors = [
        FieldError(f"spec.mca.{key}", "is not an MCA parameter name ([A-Za-z0-9_]+)")
        for key in spec.mca
        if not _MCA_NAME.fullmatch(key)
    ]
    path = "spec.worker.extraMPIArgs"
    args = spec.worker.extra_mpi_args
    errors += [FieldError(path, error) for error in _mpi.npernode_errors(args)]
    flags = {arg.partition("=")[0] for arg in args}
    errors += [
        FieldError(path, f"{flag}: the launcher passes the workers' hostfile itself")
        for flag in _mpi.HOSTFILE_FLAGS
        if flag in flags
    ]
    if spec.mpi_home is not None and "--prefix" in flags:
        errors.append(FieldError(path, "--prefix: spec.mpiHome sets it already"))
    return errors


def _mount_errors(spec: MPIJobSpec) -> list[FieldError]:
    """Our volumes and mounts must not collide with the template's: the pod would be invalid."""
    pod = spec.worker.template.spec
    errors = [
        FieldError(f"spec.worker.template.spec.volumes[{i}].name", "is reserved")
        for i, volume in enumerate(pod.volumes or ())
        if volume.get("name") in (SSH_VOLUME, HOSTFILE_VOLUME)
    ]
    index = _worker_container(spec)
    if index is not None:
        ours = {spec.ssh.ssh_auth_mount_path.rstrip("/"), _mpi.HOSTFILE_DIR}
        errors += [
            FieldError(
                f"{_CONTAINERS}[{index}].volumeMounts[{i}].mountPath",
                "is where the job mounts its ssh keys or hostfile",
            )
            for i, mount in enumerate(pod.containers[index].volume_mounts or ())
            if str(mount.get("mountPath", "")).rstrip("/") in ours
        ]
    return errors


def _run_mode_errors(spec: MPIJobSpec) -> list[FieldError]:
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
    """`Pod[name] exited with error code N (reason): last log line`, as T9k words it.

    The main container's exit is preferred; an init container or sidecar that failed explains
    a pod whose main container did not. Evictions and OOM kills are named.
    """
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
    lines = [
        line.strip()
        for line in str(
            status.get("message") or (terminated or {}).get("message") or ""
        ).splitlines()
        if any(ch.isalnum() for ch in line)
    ]
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
