"""The HorovodJob kind: workers running sshd, and a launcher that runs horovodrun over ssh.

Our API in T9k's group `batch.tensorstack.dev/v1beta1`: spec.worker{replicas, slotsPerWorker,
cmd, template}, spec.horovod{backend, networkInterfaces, startTimeout}, spec.elastic and
spec.ssh. A static job lists its workers in a hostfile, and its launcher starts once every
worker is Ready and waits again for each to accept ssh. An elastic job (spec.elastic, Gloo
only) hands horovodrun a host discovery script that the controller rewrites with the Running
and Ready workers; it scales with spec.worker.replicas and replaces a lost worker instead of
failing. Either way the launcher's exit code decides the outcome.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

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
from jobkinds import _horovod, _ssh
from jobkinds._horovod import (
    CONFIG_DIR,
    CONFIG_VOLUME,
    LAUNCHER,
    LAUNCHER_CONTAINER,
    SSH_VOLUME,
    WORKER,
    WORKER_CONTAINER,
    ended,
    is_ready,
    launcher_name,
    phase,
    ssh_secret_name,
    worker_name,
)

_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_INTERFACE = re.compile(r"[A-Za-z0-9_.:@-]+")
_CONTAINERS = "spec.worker.template.spec.containers"


class HorovodWorkerSpec(ApiModel):
    replicas: int = Field(default=1, ge=1, description="Number of worker pods.")
    slots_per_worker: int = Field(
        default=1, ge=1, description="Horovod processes per worker (the hostfile's slots)."
    )
    cmd: list[str] = Field(
        min_length=1, description="The program horovodrun starts on the workers, with its args."
    )
    template: PodTemplateSpec = Field(
        description="Pod template of workers and launcher; needs a container named worker, "
        "whose command and args are replaced (sshd on workers, horovodrun on the launcher)."
    )


class HorovodSpec(ApiModel):
    backend: Literal["gloo", "mpi"] = Field(
        default="gloo",
        description="Controller and collectives: gloo (default; needed for elastic) or mpi.",
    )
    network_interfaces: list[str] = Field(
        default_factory=list, description="Interfaces for Horovod traffic (--network-interfaces)."
    )
    start_timeout: int | None = Field(
        default=None, ge=1, description="Seconds horovodrun waits for its processes to start."
    )


class ElasticSpec(ApiModel):
    min_replicas: int = Field(ge=1, description="Fewest workers the job runs with.")
    max_replicas: int = Field(ge=1, description="Most workers the job scales up to.")
    reset_limit: int | None = Field(
        default=None, ge=0, description="How many times horovodrun may reset its workers."
    )


class SSHSpec(ApiModel):
    sshd_path: str = Field(
        default="/usr/sbin/sshd", description="Absolute path of sshd in the worker image."
    )
    ssh_auth_mount_path: str = Field(
        default=_horovod.DEFAULT_SSH_MOUNT,
        description="Where the job's ssh keys are mounted: the ~/.ssh of the user running Horovod.",
    )


class HorovodJobSpec(JobSpec):
    worker: HorovodWorkerSpec = Field(description="The workers, and the program they run.")
    horovod: HorovodSpec = Field(default_factory=HorovodSpec, description="horovodrun options.")
    elastic: ElasticSpec | None = Field(
        default=None,
        description="Run elastic Horovod: workers may come and go within [min, max] replicas.",
    )
    ssh: SSHSpec = Field(default_factory=SSHSpec, description="sshd and key locations.")


class HorovodJobKind:
    """HorovodJob: see the module docstring; satisfies `jobcore.JobKind[HorovodJobSpec]`."""

    resource: Resource = Resource("batch.tensorstack.dev", "v1beta1", "HorovodJob", "horovodjobs")
    short_names: Sequence[str] = ("hj", "hvdj")
    spec_model: type[HorovodJobSpec] = HorovodJobSpec
    replica_types: Sequence[str] = (LAUNCHER, WORKER)
    child_resources: Sequence[Resource] = (SECRETS, CONFIGMAPS, SERVICES, PODS)
    kept_after_cleanup: Sequence[str] = (LAUNCHER,)
    printer_columns: Sequence[Mapping[str, Any]] = (
        {"name": "Workers", "type": "integer", "jsonPath": ".spec.worker.replicas"},
    )

    def validate(self, job: Job[HorovodJobSpec]) -> list[FieldError]:
        """What the schema cannot say and would otherwise fail at pod creation or horovodrun."""
        return [
            *_name_errors(job),
            *_container_errors(job.spec),
            *_horovod_errors(job.spec),
            *_mount_errors(job.spec),
            *_run_mode_errors(job.spec),
        ]

    def replicas(self, job: Job[HorovodJobSpec]) -> Mapping[str, int]:
        return {LAUNCHER: 1, WORKER: job.spec.worker.replicas}

    def render(self, job: Job[HorovodJobSpec], observed: Observed) -> list[Object]:
        """Secret, hostfile or discovery script, Service, workers, then the launcher.

        The launcher starts once every worker is Ready (static) or at least minReplicas are
        (elastic), in debug mode at once, and is returned for as long as it exists. An elastic
        job's ended worker is left out, so the reconciler deletes it and recreates it on the
        next pass; its discovery script lists the Running and Ready workers of this moment.
        """
        secret = observed.get(SECRETS, ssh_secret_name(job)) or _ssh.ssh_secret(
            job, ssh_secret_name(job)
        )
        children = [secret, _horovod.config_configmap(job, observed), _horovod.service(job)]
        if _horovod.paused(job):
            return children
        names = [worker_name(job, i) for i in range(job.spec.worker.replicas)]
        elastic = job.spec.elastic
        children += [
            _horovod.worker_pod(job, i)
            for i, name in enumerate(names)
            if not (elastic and ended(observed.get(PODS, name)))
        ]
        ready = sum(is_ready(observed.get(PODS, name)) for name in names)
        needed = elastic.min_replicas if elastic else len(names)
        if (
            observed.get(PODS, launcher_name(job)) is not None
            or _horovod.debugging(job)
            or ready >= needed
        ):
            children.append(_horovod.launcher_pod(job))
        return children

    def interpret(self, job: Job[HorovodJobSpec], observed: Observed) -> Outcome:
        """The launcher's exit decides; a static job's worker that stops first fails it."""
        if _horovod.paused(job):
            return Outcome("pending", "Paused", "The job is paused: its pods are deleted.")
        launcher = observed.get(PODS, launcher_name(job))
        names = [worker_name(job, i) for i in range(job.spec.worker.replicas)]
        workers = {name: observed.get(PODS, name) for name in names}
        launcher_phase = phase(launcher)
        if launcher_phase == "Succeeded":
            return Outcome("succeeded", "Succeeded", "The job has finished successfully.")
        if launcher is not None and launcher_phase == "Failed":
            failure = _failure(launcher, LAUNCHER_CONTAINER)
            return Outcome(
                "failed", "Failed", "The job exited with an error code.", replica_failure=failure
            )
        if job.spec.elastic is None:
            failures = [_failure(p, WORKER_CONTAINER) for p in workers.values() if p and ended(p)]
            if failures:
                message = "A worker stopped before the launcher finished."
                return Outcome("failed", "Failed", message, replica_failure=_summary(failures))
        problems = [
            problem
            for pod in (launcher, *workers.values())
            if pod is not None and (problem := _problem(pod))
        ]
        replica_failure = _summary(problems) if problems else None
        if launcher_phase == "Running":
            return Outcome("running", replica_failure=replica_failure)
        reason, message = _pending(job, launcher, workers)
        return Outcome("pending", reason, message, replica_failure=replica_failure)


def _pending(
    job: Job[HorovodJobSpec], launcher: Object | None, workers: Mapping[str, Object | None]
) -> tuple[str, str]:
    """What a job that is not running yet waits for."""
    if launcher is not None:
        return "LauncherPending", "Waiting for the launcher to start."
    unready = [name for name, pod in workers.items() if not is_ready(pod)]
    elastic = job.spec.elastic
    needed = elastic.min_replicas if elastic else len(workers)
    if len(workers) - len(unready) >= needed:
        return "LauncherCreating", "Enough workers are Ready; creating the launcher."
    if missing := [name for name, pod in workers.items() if pod is None]:
        return (
            "WorkersCreating",
            f"Waiting for {len(missing)} worker(s) to be created: {_names(missing)}.",
        )
    return (
        "WorkersNotReady",
        f"Waiting for {needed} of {len(workers)} worker(s) to become Ready (sshd accepting "
        f"connections on port 22); not Ready: {_names(unready)}.",
    )


def _names(names: Sequence[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _summary(items: Sequence[str], shown: int = 3) -> str:
    more = f"; and {len(items) - shown} more" if len(items) > shown else ""
    return "; ".join(items[:shown]) + more


# Validation helpers ----------------------------------------------------------------------


def _name_errors(job: Job[HorovodJobSpec]) -> list[FieldError]:
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
    most = max(job.spec.worker.replicas, job.spec.elastic.max_replicas if job.spec.elastic else 0)
    longest = worker_name(job, most - 1)
    if len(longest) > 63:
        errors.append(
            FieldError(
                "metadata.name", f"is too long: worker hostname {longest!r} exceeds 63 characters"
            )
        )
    return errors


def _worker_container(spec: HorovodJobSpec) -> int | None:
    containers = spec.worker.template.spec.containers
    return next((i for i, c in enumerate(containers) if c.name == WORKER_CONTAINER), None)


def _container_errors(spec: HorovodJobSpec) -> list[FieldError]:
    index = _worker_container(spec)
    if index is None:
        return [FieldError(_CONTAINERS, f'needs a container named "{WORKER_CONTAINER}"')]
    if not spec.worker.template.spec.containers[index].image:
        return [FieldError(f"{_CONTAINERS}[{index}].image", "is required")]
    return []


def _horovod_errors(spec: HorovodJobSpec) -> list[FieldError]:
    """Elastic bounds and backend, interface names, and sshd/key paths."""
    errors = [
        FieldError(
            f"spec.horovod.networkInterfaces[{i}]", f"is not a network interface name: {name!r}"
        )
        for i, name in enumerate(spec.horovod.network_interfaces)
        if not _INTERFACE.fullmatch(name)
    ]
    elastic = spec.elastic
    if elastic is not None:
        if spec.horovod.backend != "gloo":
            errors.append(FieldError("spec.horovod.backend", 'must be "gloo" for an elastic job'))
        if elastic.max_replicas < elastic.min_replicas:
            errors.append(
                FieldError("spec.elastic.maxReplicas", "must be at least spec.elastic.minReplicas")
            )
        if not elastic.min_replicas <= spec.worker.replicas <= elastic.max_replicas:
            errors.append(
                FieldError(
                    "spec.worker.replicas",
                    f"must be within spec.elastic [{elastic.min_replicas}, "
                    f"{elastic.max_replicas}], got {spec.worker.replicas}",
                )
            )
    paths = {"spec.ssh.sshdPath": spec.ssh.sshd_path}
    paths["spec.ssh.sshAuthMountPath"] = spec.ssh.ssh_auth_mount_path
    errors += [
        FieldError(field, f"must be an absolute path without spaces, got {path!r}")
        for field, path in paths.items()
        if not path.startswith("/") or any(c.isspace() for c in path)
    ]
    return errors


def _mount_errors(spec: HorovodJobSpec) -> list[FieldError]:
    """Our volumes and mounts must not collide with the template's: the pod would be invalid."""
    pod = spec.worker.template.spec
    errors = [
        FieldError(f"spec.worker.template.spec.volumes[{i}].name", "is reserved")
        for i, volume in enumerate(pod.volumes or ())
        if volume.get("name") in (SSH_VOLUME, CONFIG_VOLUME)
    ]
    index = _worker_container(spec)
    if index is not None:
        ours = {spec.ssh.ssh_auth_mount_path.rstrip("/"), CONFIG_DIR}
        errors += [
            FieldError(
                f"{_CONTAINERS}[{index}].volumeMounts[{i}].mountPath",
                "is where the job mounts its ssh keys, hostfile or discovery script",
            )
            for i, mount in enumerate(pod.containers[index].volume_mounts or ())
            if str(mount.get("mountPath", "")).rstrip("/") in ours
        ]
    return errors


def _run_mode_errors(spec: HorovodJobSpec) -> list[FieldError]:
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
    {"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"}
    | {"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}
    | {"CrashLoopBackOff"}
)
"""Waiting reasons that need the user: the pod will not get further on its own."""


def _statuses(pod: Object) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failure(pod: Object, container: str) -> str:
    """`Pod[name] exited with error code N`, as T9k words it; evictions and OOM kills named."""
    name = pod["metadata"]["name"]
    status = pod.get("status") or {}
    terminated = [
        (s.get("name"), s["state"]["terminated"])
        for s in _statuses(pod)
        if "terminated" in (s.get("state") or {})
    ]
    main = next((t for n, t in terminated if n == container), None)
    failed = next((t for _, t in terminated if t.get("exitCode")), None)
    chosen = main if main and main.get("exitCode") else failed or main
    pod_reason = status.get("reason")
    if chosen is None or chosen.get("exitCode") is None:
        return _clip(f"Pod[{name}] failed" + (f": {pod_reason}" if pod_reason else ""))
    if chosen["exitCode"] == 0:
        return f"Pod[{name}] exited with code 0 before the launcher finished"
    text = f"Pod[{name}] exited with error code {chosen['exitCode']}"
    notes = [r for r in (chosen.get("reason"), pod_reason) if r and r != "Error"]
    if notes:
        text += f" ({', '.join(dict.fromkeys(notes))})"
    return _clip(text)


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
