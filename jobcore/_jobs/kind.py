"""The JobKind plugin interface: what a job kind tells the generic job reconciler."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Generic
from typing import Literal
from typing import Protocol
from typing import TypeVar

from jobcore._jobs.models import ApiModel
from jobcore._jobs.models import JobSpec
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import RunMode
from jobcore._jobs.models import RunPolicy
from jobcore._jobs.models import SchedulerPolicy
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource

SpecT = TypeVar("SpecT", bound=ApiModel)
SpecT_co = TypeVar("SpecT_co", bound=ApiModel, covariant=True)

JOB_NAME_LABEL = "jobcore.dev/job-name"
"""On every child object: the name of the job that owns it."""
JOB_KIND_LABEL = "jobcore.dev/job-kind"
REPLICA_TYPE_LABEL = "jobcore.dev/replica-type"
REPLICA_INDEX_LABEL = "jobcore.dev/replica-index"
DEFAULT_CLUSTER_DOMAIN = "cluster.local"
DEFAULT_AGENT_IMAGE = "jobcore:0.1.0"
"""jobcore's own image (as manifests/deploy runs it), which holds its launch agent."""
DEFAULT_AGENT_PATH = "/usr/local/bin/jobcore-agent"
"""Kubernetes' default cluster DNS domain (kubelet's `clusterDomain`)."""


@dataclass(frozen=True, slots=True)
class FieldError:
    """A problem with one field of a job, e.g. `spec.worker.replicas: must be at least 1`."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True, slots=True)
class GangPolicy:
    """A job's own PodGroup settings for the controller's gang scheduler (Volcano or
    scheduler-plugins), each left to the scheduler's default when None: Kubeflow's
    `schedulingPolicy`."""

    min_available: int | None = None
    queue: str | None = None
    min_resources: Mapping[str, Any] | None = None
    priority_class: str | None = None
    schedule_timeout_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class JobPolicy:
    """What the job layer obeys in a job: its run policy, run mode and gang scheduler.

    A `JobSpec` holds them as fields (`runPolicy`, `runMode`, `scheduler`); a kind whose API
    says them otherwise (Kubeflow's runPolicy, its suspend) translates its spec into one with a
    `policy` hook (`KindHooks.policy`).
    """

    run_policy: RunPolicy = field(default_factory=RunPolicy)
    run_mode: RunMode | None = None
    scheduler: SchedulerPolicy | None = None
    gang: GangPolicy | None = None

    @classmethod
    def of(cls, spec: JobSpec) -> JobPolicy:
        return cls(spec.run_policy, spec.run_mode, spec.scheduler)


FROM_SPEC = JobPolicy()
"""A Job built without a policy takes its spec's (how plugins built Jobs before policies)."""


@dataclass(frozen=True, slots=True)
class AgentSource:
    """Where jobcore's launch agent comes from (`jobcore run --agent-image`, `--agent-path`):
    an image holding the static `jobcore-agent`, and its path there. A kind that launches
    without ssh copies it into its pods with an init container of that image, so the job's
    own image needs nothing of it."""

    image: str = DEFAULT_AGENT_IMAGE
    path: str = DEFAULT_AGENT_PATH


DEFAULT_AGENT = AgentSource()
AGENT_INIT_CONTAINER = "jobcore-agent"
"""The init container that copies the agent into a pod: kept when a run mode skips the pod's
init containers, as the pod's own commands may run the agent."""


@dataclass(frozen=True, slots=True)
class PodSetInfo:
    """What Kueue's admission adds to one pod set's pods (its flavours' and its admission
    checks' pod set updates), and how many of them it admitted."""

    count: int
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Sequence[Object] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    conflict: str | None = None
    """Why the pod set cannot start: an admission check's update contradicts the rest."""


@dataclass(frozen=True, slots=True)
class Job(Generic[SpecT]):
    """A job as a kind sees it: its identity, its validated spec, and its last status.

    `gang` is True when a gang scheduler admits the job's pods: it binds none until all of
    them exist, so a kind must render every pod at once rather than wait for some to be Ready.
    """

    kind: str
    name: str
    namespace: str
    uid: str
    spec: SpecT
    status: JobStatus
    obj: Object = field(repr=False)
    gang: bool = False
    policy: JobPolicy = field(default=FROM_SPEC)
    """What the job layer obeys; when not given, a `JobSpec`'s own fields."""
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN
    """The cluster's DNS domain (`jobcore run --cluster-domain`): see `service_domain`."""
    agent: AgentSource = DEFAULT_AGENT
    """Where the controller's launch agent comes from, for kinds that launch without ssh."""
    held: str | None = None
    """Why the job layer holds the job's pods back (Kueue has not admitted it): a held job
    runs no pods, as a paused one."""
    admission: Mapping[str, PodSetInfo] | None = None
    """Kueue's admission, by pod set (the replica type, lower-cased): merged into the pods."""

    def __post_init__(self) -> None:
        if self.policy is FROM_SPEC and isinstance(self.spec, JobSpec):
            object.__setattr__(self, "policy", JobPolicy.of(self.spec))

    @property
    def debugging(self) -> bool:
        """`spec.runMode.debug.enabled`: jobcore swaps in the debug commands; start at once."""
        return self.policy.run_mode is not None and self.policy.run_mode.debugging

    @property
    def paused(self) -> bool:
        """`spec.runMode.pause.enabled`, or `held`: jobcore creates none of the job's pods."""
        return self.held is not None or (
            self.policy.run_mode is not None and self.policy.run_mode.paused
        )

    def service_domain(self, service: str | None = None) -> str:
        """`<service>.<namespace>.svc.<cluster domain>`, the domain a headless Service names its
        pods in (`<hostname>.<that>`): the job's own Service, named after it, by default."""
        return f"{service or self.name}.{self.namespace}.svc.{self.cluster_domain}"

    def labels(self, replica_type: str | None = None, index: int | None = None) -> dict[str, str]:
        """The labels jobcore selects and reads children by; kinds put them on every child."""
        labels = {JOB_NAME_LABEL: self.name, JOB_KIND_LABEL: self.kind}
        if replica_type is not None:
            labels[REPLICA_TYPE_LABEL] = replica_type
        if index is not None:
            labels[REPLICA_INDEX_LABEL] = str(index)
        return labels


@dataclass(frozen=True, slots=True)
class Observed:
    """The job's children as the cache sees them now, by resource and name."""

    children: Mapping[Resource, Mapping[str, Object]]

    @property
    def pods(self) -> Mapping[str, Object]:
        return self.children.get(PODS, {})

    def get(self, resource: Resource, name: str) -> Object | None:
        return self.children.get(resource, {}).get(name)

    def pods_of(self, replica_type: str) -> list[Object]:
        """The pods of one replica type, ordered by their replica index."""
        pods = [
            pod
            for pod in self.pods.values()
            if (pod["metadata"].get("labels") or {}).get(REPLICA_TYPE_LABEL) == replica_type
        ]
        return sorted(pods, key=lambda p: int(p["metadata"]["labels"].get(REPLICA_INDEX_LABEL, 0)))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the kind makes of the observed pods.

    `replica_failure` names a failed replica for the ReplicaFailure condition, e.g.
    `Pod[job-launcher] exited with error code 3`; it may accompany any state.
    """

    state: Literal["pending", "running", "succeeded", "failed"]
    reason: str = ""
    message: str = ""
    replica_failure: str | None = None

    @property
    def ended(self) -> bool:
        """Succeeded or failed: the job is over."""
        return self.state in ("succeeded", "failed")


class JobKind(Protocol[SpecT]):
    """A kind of job: its API, its validation, the children it needs, and how it ends.

    The generic reconciler parses the job with `spec_model` (pydantic errors become field
    errors), asks `validate` for the rest, creates whatever `render` returns that does not
    exist yet — the other children, then the Pods and batch Jobs, each group at once (a
    workload only once what it mounts exists) — updates ConfigMaps
    whose data changed, deletes owned Pods that `render` no longer returns, and derives the
    whole status from the pods plus `interpret`.
    `render` and `interpret` must be pure functions of the job and the observed children,
    with one allowed exception: a child that is random by nature (an ssh key) may be new on
    each call, because existing children are never updated — return the observed one when it
    exists. The members below are read-only: plain class attributes satisfy them.
    """

    @property
    def resource(self) -> Resource:
        """Group, version, kind and plural of the job resource."""
        ...

    @property
    def short_names(self) -> Sequence[str]: ...

    @property
    def spec_model(self) -> type[SpecT]: ...

    @property
    def replica_types(self) -> Sequence[str]:
        """Replica types in status order, e.g. ("launcher", "worker")."""
        ...

    @property
    def child_resources(self) -> Sequence[Resource]:
        """Every resource `render` may return; the controller caches and watches them."""
        ...

    @property
    def containers(self) -> Mapping[str, str]:
        """Each replica type's main container: run modes replace its command, failures are
        read from its exit code. A type left out means the pod's first container."""
        ...

    @property
    def debug_commands(self) -> Mapping[str, Sequence[str] | None]:
        """Each replica type's command in debug mode when the job names none; None keeps the
        rendered command (e.g. sshd on MPI workers); a type left out runs `sleep inf`."""
        ...

    @property
    def kept_after_cleanup(self) -> Sequence[str]:
        """Replica types whose pods `runPolicy.cleanUpWorkers` keeps, e.g. the launcher's log."""
        ...

    @property
    def printer_columns(self) -> Sequence[Mapping[str, Any]]:
        """Extra `additionalPrinterColumns` for the CRD, e.g. the worker count."""
        ...

    def validate(self, job: Job[SpecT]) -> list[FieldError]:
        """Problems the model cannot see, by field path. It may read only the spec and the
        job's name and namespace: the controller keeps its answer until the spec changes
        (a new `metadata.generation`)."""
        ...

    def replicas(self, job: Job[SpecT]) -> Mapping[str, int]:
        """How many pods of each replica type the job runs at full strength."""
        ...

    def render(self, job: Job[SpecT], observed: Observed) -> list[Object]: ...

    def interpret(self, job: Job[SpecT], observed: Observed) -> Outcome: ...
