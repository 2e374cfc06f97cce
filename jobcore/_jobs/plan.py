"""What the controller creates for a job: the kind's children with run modes and scheduling.

A kind renders its children for a normal run; jobcore applies what every kind shares on
top: a paused (or held) job gets no pods, a debugging job's pods run their debug commands,
pods made after a pause follow `resumeSpecs`, a gang scheduler's fields go on every pod, with
the job's PodGroup before them, and so does Kueue's admission. Every child gets the job's
namespace, labels and ownerReference. Pure, so that `jobcore render` shows exactly what the
controller would create.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jobcore._jobs.admission import admit_pod
from jobcore._jobs.kind import AGENT_INIT_CONTAINER
from jobcore._jobs.kind import REPLICA_INDEX_LABEL
from jobcore._jobs.kind import REPLICA_TYPE_LABEL
from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import Job
from jobcore._jobs.kind import JobKind
from jobcore._jobs.kind import JobPolicy
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import PodSetInfo
from jobcore._jobs.kind import SpecT
from jobcore._jobs.models import JobSpec
from jobcore._jobs.models import ResumeSpec
from jobcore._jobs.scheduling import GangScheduler
from jobcore._jobs.scheduling import scheduler_for
from jobcore._runtime.errors import TerminalError
from jobcore._runtime.resources import BATCH_JOBS
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import owner_reference

RUN_MODE_LABEL = "jobcore.dev/run-mode"
"""On pods created in debug mode (`debug`); a pod whose mode is not the job's is replaced."""

DEFAULT_DEBUG_COMMAND = ("sleep", "inf")
"""A debugging replica's command when neither the job nor the kind names one."""

_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_WORKLOADS = (PODS.kind, BATCH_JOBS.kind)


def run_mode_errors(spec: JobSpec | JobPolicy, replica_types: Sequence[str]) -> list[FieldError]:
    """Every `spec.runMode` entry must name one of the kind's replica types."""
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
    allowed = " or ".join(repr(t) for t in replica_types)
    return [
        FieldError(path, f"must be {allowed}, got {value!r}")
        for path, value in entries
        if value not in replica_types
    ]


class UnservedChildren(TerminalError):
    """A kind rendered children of a kind its `child_resources` does not name: a plugin's bug.
    The controller neither watches nor owns those, so it creates none of the job's children;
    `error` says so, for the job's status."""

    def __init__(self, kind: str, unserved: Sequence[str]) -> None:
        self.error = FieldError(
            "spec",
            f"{kind} rendered {list(unserved)}, not in its child_resources: a bug in the kind; "
            "none of the job's children is created until it is fixed",
        )
        super().__init__(self.error.message)


@dataclass(frozen=True, slots=True)
class PlannedChildren:
    """One reconcile's plan for a job: what it should have now, as the controller makes it."""

    job: Job[Any]
    """The job planned with: `gang` is set when a gang scheduler admits its pods."""
    scheduler: GangScheduler | None
    pod_group: Object | None
    """The job's PodGroup, adopted; applied before any of its pods is created."""
    desired: list[Object]
    """The children in the kind's order, not yet adopted (the controller adopts each as it
    creates it)."""

    def adopted(self) -> list[Object]:
        """The PodGroup, then every child as created: in the job's namespace, owned by it."""
        group = [self.pod_group] if self.pod_group is not None else []
        return [*group, *(adopt(self.job, child) for child in self.desired)]


def plan_children(
    kind: JobKind[Any],
    job: Job[Any],
    observed: Observed,
    default_scheduler: GangScheduler | None,
    *,
    resume_specs: Sequence[ResumeSpec] | None = None,
) -> PlannedChildren:
    """What the reconciler creates for `job` given the `observed` children, and what
    `jobcore render` prints: one function, so the two cannot differ.

    Raises UnservedChildren when the kind renders a child outside its `child_resources`.
    """
    job, scheduler = gang_scheduling(job, default_scheduler)
    desired = plan(kind, job, observed, scheduler=scheduler, resume_specs=resume_specs)
    if unknown := unserved_kinds(kind, desired):
        raise UnservedChildren(kind.resource.kind, unknown)
    group = pod_group(kind, job, scheduler, desired) if scheduler is not None else None
    return PlannedChildren(job, scheduler, group, desired)


def plan(
    kind: JobKind[Any],
    job: Job[Any],
    observed: Observed,
    *,
    scheduler: GangScheduler | None = None,
    resume_specs: Sequence[ResumeSpec] | None = None,
) -> list[Object]:
    """The children the job should have now, in the kind's order.

    `resume_specs` is given once the job has been paused and resumed: the pods created from
    then on follow it.
    """
    children = kind.render(job, observed)
    if job.paused:  # no pods, nor batch Jobs that would run some
        return [child for child in children if child.get("kind") not in _WORKLOADS]
    if job.admission is not None:  # Kueue may admit fewer pods than asked (a pod set's minCount)
        children = [child for child in children if _admitted(child, job.admission)]
    for child in children:
        if scheduler is not None and child.get("kind") == BATCH_JOBS.kind:
            template = child["spec"]["template"]
            template.setdefault("metadata", {})
            scheduler.decorate(job, template)  # its pods join the gang too
    for pod in children:
        if pod.get("kind") != PODS.kind:
            continue
        replica_type = (pod["metadata"].get("labels") or {}).get(REPLICA_TYPE_LABEL, "")
        if job.debugging:
            _debug(kind, job, pod, replica_type)
        elif resume_specs is not None:
            _resume(kind, resume_specs, pod, replica_type)
        if scheduler is not None:
            scheduler.decorate(job, pod)
        if job.admission is not None:
            admit_pod(pod, job.admission)
    return children


def gang_scheduling(
    job: Job[SpecT], default: GangScheduler | None
) -> tuple[Job[SpecT], GangScheduler | None]:
    """The gang scheduler that admits the job's pods, if any, and the job to plan with.

    The job's own `spec.scheduler.t9kScheduler` wins over the controller's `default`; a
    paused job has no pods, so no gang. With a scheduler, the job comes back with `gang` set.
    """
    scheduler = None if job.paused else scheduler_for(job, default)
    return (dataclasses.replace(job, gang=True) if scheduler is not None else job), scheduler


def pod_group(
    kind: JobKind[Any], job: Job[Any], scheduler: GangScheduler, children: Sequence[Object]
) -> Object:
    """The job's PodGroup for the planned `children`, adopted: all its pods, or none."""
    pods = [child for child in children if child.get("kind") == PODS.kind]
    return adopt(job, scheduler.pod_group(job, sum(kind.replicas(job).values()), pods))


def unserved_kinds(kind: JobKind[Any], children: Sequence[Object]) -> list[str]:
    """The kinds among `children` that `kind.child_resources` does not name, sorted: the
    controller refuses to create those (it neither watches nor owns them)."""
    served = {resource.kind for resource in kind.child_resources}
    return sorted({str(child.get("kind")) for child in children} - served)


def adopt(job: Job[Any], child: Object) -> Object:
    """`child` (changed in place) in the job's namespace, with its labels, owned by it.

    What the controller does to every child before creating it: the job's labels are added to
    the child's own, and the job becomes its controller, so the child goes with the job.
    """
    meta = child["metadata"]
    meta["namespace"] = job.namespace
    meta["labels"] = {**(meta.get("labels") or {}), **job.labels()}
    meta["ownerReferences"] = [owner_reference(job.obj)]
    return child


def _admitted(child: Object, admission: Mapping[str, PodSetInfo]) -> bool:
    """Whether Kueue admitted this child: any but a pod whose index is past its pod set's
    admitted count."""
    if child.get("kind") != PODS.kind:
        return True
    labels = child["metadata"].get("labels") or {}
    info = admission.get(str(labels.get(REPLICA_TYPE_LABEL, "")).lower())
    index = str(labels.get(REPLICA_INDEX_LABEL, "0"))
    return info is None or not index.isdigit() or int(index) < info.count


def run_mode_of(pod: Object) -> str:
    return str((pod["metadata"].get("labels") or {}).get(RUN_MODE_LABEL, ""))


def _main_container(kind: JobKind[Any], pod: Object, replica_type: str) -> dict[str, Any]:
    """The replica's main container, copied into the pod first: a kind may share its
    containers' parts between pods (`PodTemplateSpec.pod_spec`), and only this pod changes."""
    containers: list[dict[str, Any]] = list(pod["spec"]["containers"])
    name = kind.containers.get(replica_type)
    index = next((i for i, c in enumerate(containers) if c["name"] == name), 0)
    containers[index] = dict(containers[index])
    pod["spec"]["containers"] = containers
    return containers[index]


def _debug(kind: JobKind[Any], job: Job[Any], pod: Object, replica_type: str) -> None:
    """The debug command in place of the replica's (probes it could not pass dropped)."""
    mode = job.policy.run_mode
    entries = (mode.debug.replica_specs if mode and mode.debug else None) or ()
    entry = next((r for r in entries if r.type == replica_type), None)
    command = (entry and entry.command) or _default_debug_command(kind.debug_commands, replica_type)
    if command is not None:
        container = _main_container(kind, pod, replica_type)
        container["command"] = list(command)
        container.pop("args", None)
        for probe in _PROBES:
            container.pop(probe, None)
    if entry is not None and entry.skip_init_container:
        _skip_init_containers(pod)
    pod["metadata"].setdefault("labels", {})[RUN_MODE_LABEL] = "debug"


def _default_debug_command(
    defaults: Mapping[str, Sequence[str] | None], replica_type: str
) -> Sequence[str] | None:
    """The kind's default; None keeps the rendered command (e.g. sshd on MPI workers)."""
    if replica_type in defaults:
        return defaults[replica_type]
    return DEFAULT_DEBUG_COMMAND


def _resume(
    kind: JobKind[Any], resume_specs: Sequence[ResumeSpec], pod: Object, replica_type: str
) -> None:
    entry = next((r for r in resume_specs if r.type == replica_type), None)
    if entry is None:
        return
    if entry.command is not None or entry.args is not None:
        container = _main_container(kind, pod, replica_type)
        if entry.command is not None:
            container["command"] = list(entry.command)
            container.pop("args", None)
        if entry.args is not None:
            container["args"] = list(entry.args)
    if entry.skip_init_container:
        _skip_init_containers(pod)


def _skip_init_containers(pod: Object) -> None:
    """The pod without its init containers but jobcore's agent's, which its commands use."""
    kept = [c for c in pod["spec"].pop("initContainers", ()) if c["name"] == AGENT_INIT_CONTAINER]
    if kept:
        pod["spec"]["initContainers"] = kept
