"""pydantic models of the T9k job API pieces every job kind shares: templates, policies, status."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import StringConstraints
from pydantic import field_validator
from pydantic.alias_generators import to_camel

from jobcore._runtime.resources import DNS1123_LABEL

# What the API server accepts as a name or a label, so a job's pods are not refused.
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME = re.compile(rf"({DNS1123_LABEL}(\.{DNS1123_LABEL})*/)?{_NAME}")
_TYPE_NAMES = {str: "a string", dict: "an object"}
LabelValue = Annotated[str, StringConstraints(max_length=63, pattern=rf"^({_NAME})?$")]
"""A label value: at most 63 letters, digits, `-`, `_` and `.`, alphanumeric at both ends."""
ManagerName = Annotated[
    str,
    StringConstraints(
        max_length=63,
        pattern=rf"^{DNS1123_LABEL}(\.{DNS1123_LABEL})*/[-A-Za-z0-9/._~%!$&'()*+,;=:]+$",
    ),
]
"""A controller's name as Kubernetes' Job takes one in `spec.managedBy`: a domain-prefixed
path (`example.com/controller`), at most 63 characters."""


class ApiModel(BaseModel):
    """Base of API models: camelCase on the wire, unknown fields rejected.

    The API server prunes fields a CRD schema does not name, so an unknown field only reaches
    a model from YAML read offline, where an error is what the user wants.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_api(self) -> dict[str, Any]:
        """The JSON form the API server stores: camelCase, unset fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class OpenModel(ApiModel):
    """A Kubernetes type we read only partly: unknown fields are kept and round-trip."""

    model_config = ConfigDict(extra="allow")


# Pod templates ---------------------------------------------------------------------------


class Container(OpenModel):
    name: str = Field(
        max_length=63,
        pattern=rf"^{DNS1123_LABEL}$",
        description="A DNS-1123 label, unique within the pod.",
    )
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    working_dir: str | None = None
    env: list[dict[str, Any]] | None = None
    volume_mounts: list[dict[str, Any]] | None = None
    resources: dict[str, Any] | None = None
    ports: list[dict[str, Any]] | None = None

    @field_validator("env")
    @classmethod
    def _env(cls, env: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        """Kinds read each entry's name and valueFrom: both must have their Kubernetes types."""
        for i, entry in enumerate(env or ()):
            if not isinstance(entry.get("name"), str) or not entry["name"]:
                raise ValueError(f"entry {i} needs a name")
            for key, kind in (("value", str), ("valueFrom", dict)):
                if entry.get(key) is not None and not isinstance(entry[key], kind):
                    raise ValueError(f"entry {i}: {key} must be {_TYPE_NAMES[kind]}")
        return env


class PodSpec(OpenModel):
    containers: list[Container] = Field(min_length=1)
    init_containers: list[Container] | None = None
    volumes: list[dict[str, Any]] | None = None
    restart_policy: str | None = None
    scheduler_name: str | None = None


class TemplateMeta(OpenModel):
    labels: dict[str, LabelValue] | None = None
    annotations: dict[str, str] | None = None

    @field_validator("labels", "annotations")
    @classmethod
    def _keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for key in value or ():
            if not _qualified_name(key):
                raise ValueError(
                    f"{key!r} is not a valid key: an optional DNS subdomain and '/', then at "
                    "most 63 letters, digits, '-', '_' and '.', alphanumeric at both ends"
                )
        return value


def _qualified_name(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return len(prefix) <= 253 and len(name) <= 63 and bool(_QUALIFIED_NAME.fullmatch(key))


class PodTemplateSpec(OpenModel):
    """A Pod template: typed where jobcore reads it, everything else passed through."""

    metadata: TemplateMeta | None = None
    spec: PodSpec

    def container(self, name: str) -> Container | None:
        return next((c for c in self.spec.containers if c.name == name), None)

    @functools.cached_property
    def api(self) -> Mapping[str, Any]:
        """The template as the API server takes it (`to_api`), made once per parsed template
        and shared by every pod made from it: read it, never change it."""
        return self.to_api()

    def pod_spec(self) -> dict[str, Any]:
        """A pod's spec from this template, for a kind to adapt: a new dict, with new dicts for
        each container and init container, whose fields a kind may set.

        Every other part (env, volumes, resources...) is the template's own, shared by all the
        pods made from it, so that a job's thousand pods cost one template: replace such a
        part (`spec["volumes"] = [*spec.get("volumes", ()), mine]`), never change it in place.
        """
        spec = dict(self.api["spec"])
        for key in ("containers", "initContainers"):
            if key in spec:
                spec[key] = [dict(container) for container in spec[key]]
        return spec


# Policies --------------------------------------------------------------------------------


RestartPolicy = Literal["Never", "OnFailure", "ExitCode"]
CleanUpPolicy = Literal["None", "Unfinished", "All"]
Seconds = Annotated[int, Field(ge=1)]
NonNegative = Annotated[int, Field(ge=0)]


class RunPolicy(ApiModel):
    """What happens around the job's run: retries, time limits, clean-up."""

    clean_up_workers: bool = Field(
        default=False, description="Delete the workers (never the launcher) once the job ends."
    )
    clean_up_policy: CleanUpPolicy | None = Field(
        default=None,
        description="Pods deleted once the job ends: None, Unfinished (those still running "
        "or pending) or All. Applies with cleanUpWorkers.",
    )
    backoff_limit: NonNegative = Field(
        default=0, description="How many times a failed job is torn down and recreated as a whole."
    )
    restart_policy: RestartPolicy = Field(
        default="OnFailure",
        description="Which failures use up backoffLimit: Never, OnFailure (any), or ExitCode "
        "(signals, 128+, and evictions are retried; exit codes 1-127 are permanent).",
    )
    pending_timeout_seconds: Seconds | None = Field(
        default=None,
        description="Fail the job when one of its pods stays Pending longer than this.",
    )
    active_deadline_seconds: Seconds | None = Field(
        default=None,
        description="Fail the job (reason DeadlineExceeded) and stop its pods this many "
        "seconds after it was created.",
    )
    ttl_seconds_after_finished: NonNegative | None = Field(
        default=None,
        description="Delete the whole job this many seconds after it succeeded or failed.",
    )


class T9kScheduler(ApiModel):
    """Gang scheduling by T9k Scheduler, through a PodGroup named after the job."""

    queue: LabelValue = Field(
        min_length=1,
        description="The T9k Scheduler queue the job waits in; it labels the job's pods.",
    )
    priority: int = Field(default=0, ge=0, le=100, description="Priority within the queue.")


class SchedulerPolicy(ApiModel):
    """Which scheduler places the pods; the cluster's default scheduler when unset."""

    t9k_scheduler: T9kScheduler | None = Field(
        default=None, alias="t9kScheduler", description="Use T9k Scheduler."
    )


class DebugReplicaSpec(ApiModel):
    """How one replica type's pods run in debug mode."""

    type: str = Field(description="The replica type this entry applies to.")
    skip_init_container: bool = Field(default=False, description="Drop the init containers.")
    command: list[str] | None = Field(
        default=None, description="The command run instead of the replica's; the kind's default."
    )


class DebugMode(ApiModel):
    """Set up the job's pods without training, to debug them with kubectl exec."""

    enabled: bool = Field(
        default=False, description="Create the pods with their debug commands; do not train."
    )
    replica_specs: list[DebugReplicaSpec] | None = Field(
        default=None, description="Per replica type; the defaults for types not listed."
    )


class ResumeSpec(ApiModel):
    """How one replica type's pods run when a paused job resumes."""

    type: str = Field(description="The replica type this entry applies to.")
    skip_init_container: bool = Field(default=False, description="Drop the init containers.")
    command: list[str] | None = Field(default=None, description="Replaces the command.")
    args: list[str] | None = Field(default=None, description="Replaces the arguments.")


class PauseMode(ApiModel):
    """Stop the job and free its pods, keeping everything else, until it is resumed."""

    enabled: bool = Field(
        default=False, description="Delete the job's pods; turning it off recreates them."
    )
    resume_specs: list[ResumeSpec] | None = Field(
        default=None,
        description="How each replica type runs after a pause; immutable once the job exists.",
    )


class RunMode(ApiModel):
    """Debug and pause modes; a job runs normally without them."""

    debug: DebugMode | None = Field(default=None, description="Debug mode.")
    pause: PauseMode | None = Field(default=None, description="Pause mode.")

    @property
    def debugging(self) -> bool:
        return bool(self.debug and self.debug.enabled)

    @property
    def paused(self) -> bool:
        return bool(self.pause and self.pause.enabled)


class JobSpec(ApiModel):
    """Fields every kind's spec has; kinds subclass it and add their own."""

    run_policy: RunPolicy = Field(
        default_factory=RunPolicy, description="Retries, time limits and clean-up."
    )
    scheduler: SchedulerPolicy | None = Field(
        default=None, description="Gang scheduling by T9k Scheduler."
    )
    run_mode: RunMode | None = Field(default=None, description="Debug and pause modes.")
    managed_by: ManagerName | None = Field(
        default=None,
        description=(
            "The controller that runs the job: batch.tensorstack.dev/jobcore or unset for "
            "jobcore; any other (e.g. kueue.x-k8s.io/multikueue) leaves its pods and status "
            "to that controller. Meant to be set at creation only."
        ),
    )


# Status ----------------------------------------------------------------------------------

ConditionType = Literal[
    "Initialized", "Running", "ReplicaFailure", "Completed", "Failed", "Paused", "SpecRejected"
]
JobPhase = Literal["Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown"]
ReplicaPhase = Literal[
    "Creating", "Pending", "Running", "Succeeded", "Failed", "Unknown", "Deleted"
]


class StatusModel(ApiModel):
    """Status is read back from the API server: tolerate fields a newer jobcore wrote."""

    model_config = ConfigDict(extra="ignore")


class JobCondition(StatusModel):
    """One aspect of the job's state; see docs/status.md."""

    type: ConditionType = Field(description="Which aspect.")
    status: Literal["True", "False", "Unknown"] = Field(description="Whether it holds.")
    last_transition_time: str | None = Field(
        default=None, description="When `status` last changed."
    )
    reason: str | None = Field(default=None, description="Why, in one CamelCase word.")
    message: str | None = Field(default=None, description="Why, for a human.")


class ContainerState(StatusModel):
    """A container of a replica (init containers included), as its pod reports it."""

    name: str = Field(description="The container's name.")
    state: Literal["waiting", "running", "terminated"] | None = Field(
        default=None, description="Its current state."
    )
    exit_code: int | None = Field(default=None, description="Its exit code once terminated.")
    reason: str | None = Field(
        default=None, description="Why it waits or ended, e.g. ImagePullBackOff, OOMKilled."
    )


class ReplicaStatus(StatusModel):
    """One pod of the job."""

    phase: ReplicaPhase = Field(
        description="The pod's phase, Creating before it is scheduled, Deleted once it goes."
    )
    name: str = Field(description="The pod's name.")
    uid: str | None = Field(default=None, description="The pod's uid.")
    containers: list[ContainerState] = Field(
        default_factory=list, description="Its containers' states."
    )


class Aggregate(StatusModel):
    """How many of the job's pods are in each replica phase."""

    creating: int = Field(default=0, description="Created, not yet scheduled to a node.")
    pending: int = Field(default=0, description="Scheduled, a container not yet started.")
    running: int = Field(default=0, description="Its containers started (pod phase Running).")
    succeeded: int = Field(default=0, description="Its containers exited 0 (pod phase Succeeded).")
    failed: int = Field(default=0, description="Pod phase Failed: a container failed, or eviction.")
    unknown: int = Field(default=0, description="Pod phase Unknown: its node stopped reporting.")
    deleted: int = Field(default=0, description="Being deleted, or gone while the job ran.")


class TaskStatus(StatusModel):
    """The pods of one replica type."""

    type: str = Field(description="The replica type, e.g. worker.")
    restart_count: int = Field(
        default=0, description="Container restarts plus whole-job restarts, over the type."
    )
    status: list[ReplicaStatus] = Field(
        default_factory=list,
        description="Its pods, by name; only those with a problem when `aggregate` is set.",
    )
    aggregate: Aggregate | None = Field(
        default=None,
        description="Its pods by phase, set when it has too many pods to list them all.",
    )

    def count(self, phase: ReplicaPhase) -> int:
        """How many of its pods are in `phase`, listed or not."""
        if self.aggregate is not None:
            return int(getattr(self.aggregate, phase.lower()))
        return sum(1 for replica in self.status if replica.phase == phase)


class JobStatus(StatusModel):
    """The T9k job status (conditions, phase, tasks, aggregate) and jobcore's own fields."""

    conditions: list[JobCondition] = Field(
        default_factory=list, description="Initialized, Running, ReplicaFailure, Completed..."
    )
    phase: JobPhase | None = Field(default=None, description="Where the job is in its life.")
    tasks: list[TaskStatus] = Field(default_factory=list, description="Pods by replica type.")
    aggregate: Aggregate = Field(
        default_factory=Aggregate, description="Pod counts by replica phase."
    )
    ready: str | None = Field(default=None, description="Ready replicas of all, for kubectl get.")
    restarts: int | None = Field(
        default=None,
        description="Times the whole job was torn down and recreated under backoffLimit.",
    )
    last_retry_time: str | None = Field(
        default=None,
        description="When the job last retried a failure: a restart, or a replaced pod.",
    )
    retry_delay_seconds: int | None = Field(
        default=None,
        description="How long after lastRetryTime the controller creates the pods again.",
    )
    resume_specs: list[ResumeSpec] | None = Field(
        default=None,
        description="spec.runMode.pause.resumeSpecs as first seen; later changes are refused.",
    )

    def condition(self, kind: ConditionType) -> JobCondition | None:
        return next((c for c in self.conditions if c.type == kind), None)

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")
