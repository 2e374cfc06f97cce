"""jobcore: a controller-runtime-style reconciler core for Kubernetes on asyncio.

Modules, from the bottom up:

- `_resources`, `_errors`: resource names and paths, object keys, the exception hierarchy.
- `_client`, `_json`, `_retry`: the API client over plain JSON objects, its JSON codec, and
  when it retries a failure.
- `_informer`: list+watch caches with indexers; `_labels`: label selectors.
- `_queue`, `_ratelimit`: the deduplicating, rate-limited work queue.
- `_handler`, `_predicate`: from cache events to reconcile requests.
- `_controller`: workers that drain a queue into a `Reconciler`.
- `_leaderelection`, `_server`, `_metrics`, `_events`, `_expectations`, `_logging`,
  `_gc`: what a production controller process needs around its reconcilers.
- `_manager`: runs all of the above as one process.
- `_jobmodels`, `_jobkind`, `_jobstatus`, `_crd`: the job layer's T9k job API models, the
  `JobKind` plugin interface, status derivation, and CRD generation from the models.
- `_jobreconciler`: the generic reconciler that drives any kind, one pass as a list of steps:
  read (`_jobparse`, `_jobwriter`, `_jobchildren`), decide (`_jobdecide`, `_jobplan`,
  `_jobpolicy`, `_scheduling`), act on children (`_jobchildren`), derive and write the status
  (`_jobstatus`, `_jobwriter`), announce (`_jobannounce`).
- `testing`: a real control plane, a simulated node and a pytest plugin (public).

Everything a plugin may use is imported here; the underscored modules are private.
"""

from jobcore._client import DEFAULT_MAX_CONNECTIONS, Client, PatchType, WatchEvent
from jobcore._controller import Controller, Reconciler, Result, reconciler_from
from jobcore._crd import crd_for, structural_schema, write_crds
from jobcore._errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidError,
    JobcoreError,
    LeaderElectionLost,
    NotFoundError,
    TerminalError,
)
from jobcore._events import EventRecorder
from jobcore._expectations import Expectations
from jobcore._gc import configure_gc
from jobcore._handler import (
    EnqueueRequests,
    Mapper,
    Request,
    request_for_object,
    requests_for_owner,
)
from jobcore._informer import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    EventHandler,
    IndexFunc,
    Informer,
    Keep,
    Transform,
    strip_bulk,
)
from jobcore._jobkind import (
    JOB_KIND_LABEL,
    JOB_NAME_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    FieldError,
    Job,
    JobKind,
    Observed,
    Outcome,
)
from jobcore._jobmodels import (
    ApiModel,
    CleanUpPolicy,
    Container,
    JobSpec,
    JobStatus,
    OpenModel,
    PodSpec,
    PodTemplateSpec,
    RestartPolicy,
    ResumeSpec,
    RunMode,
    RunPolicy,
    SchedulerPolicy,
)
from jobcore._jobparse import parse_job
from jobcore._jobplan import (
    RUN_MODE_LABEL,
    adopt,
    gang_scheduling,
    plan,
    pod_group,
    run_mode_errors,
    unserved_kinds,
)
from jobcore._jobreconciler import JobReconciler, add_job_controller
from jobcore._labels import parse_selector, selector_to_string
from jobcore._leaderelection import LeaderElectionConfig, LeaderElector
from jobcore._logging import configure_logging, reconcile_context
from jobcore._manager import Manager, Runnable
from jobcore._metrics import REGISTRY
from jobcore._predicate import FuncPredicate, GenerationChanged, LabelSelectorPredicate, Predicate
from jobcore._queue import QueueShutDown, WorkQueue
from jobcore._ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from jobcore._resources import (
    CONFIGMAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    SECRETS,
    SERVICES,
    Object,
    ObjectKey,
    Resource,
    controller_of,
    owner_reference,
)
from jobcore._scheduling import GangScheduler, SchedulerPlugins, T9kScheduler, Volcano
from jobcore._server import HealthChecks, ProbeServer
from jobcore._statuspart import T9K_STATUS, StatusPart, T9kStatus

__all__ = [
    "CONFIGMAPS",
    "CONTROLLER_UID_INDEX",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "DEFAULT_MAX_CONNECTIONS",
    "EVENTS",
    "JOB_KIND_LABEL",
    "JOB_NAME_LABEL",
    "LEASES",
    "NAMESPACES",
    "NAMESPACE_INDEX",
    "NODES",
    "PODS",
    "REGISTRY",
    "REPLICA_INDEX_LABEL",
    "REPLICA_TYPE_LABEL",
    "RUN_MODE_LABEL",
    "SECRETS",
    "SERVICES",
    "T9K_STATUS",
    "AlreadyExistsError",
    "ApiError",
    "ApiModel",
    "BucketRateLimiter",
    "CleanUpPolicy",
    "Client",
    "ConflictError",
    "Container",
    "Controller",
    "EnqueueRequests",
    "EventHandler",
    "EventRecorder",
    "Expectations",
    "FieldError",
    "ForbiddenError",
    "FuncPredicate",
    "GangScheduler",
    "GenerationChanged",
    "GoneError",
    "HealthChecks",
    "IndexFunc",
    "Informer",
    "InvalidError",
    "ItemExponentialFailureRateLimiter",
    "Job",
    "JobKind",
    "JobReconciler",
    "JobSpec",
    "JobStatus",
    "JobcoreError",
    "Keep",
    "LabelSelectorPredicate",
    "LeaderElectionConfig",
    "LeaderElectionLost",
    "LeaderElector",
    "Manager",
    "Mapper",
    "MaxOfRateLimiter",
    "NotFoundError",
    "Object",
    "ObjectKey",
    "Observed",
    "OpenModel",
    "Outcome",
    "PatchType",
    "PodSpec",
    "PodTemplateSpec",
    "Predicate",
    "ProbeServer",
    "QueueShutDown",
    "RateLimiter",
    "Reconciler",
    "Request",
    "Resource",
    "RestartPolicy",
    "Result",
    "ResumeSpec",
    "RunMode",
    "RunPolicy",
    "Runnable",
    "SchedulerPlugins",
    "SchedulerPolicy",
    "StatusPart",
    "T9kScheduler",
    "T9kStatus",
    "TerminalError",
    "Transform",
    "Volcano",
    "WatchEvent",
    "WorkQueue",
    "add_job_controller",
    "adopt",
    "configure_gc",
    "configure_logging",
    "controller_of",
    "crd_for",
    "default_controller_rate_limiter",
    "gang_scheduling",
    "owner_reference",
    "parse_job",
    "parse_selector",
    "plan",
    "pod_group",
    "reconcile_context",
    "reconciler_from",
    "request_for_object",
    "requests_for_owner",
    "run_mode_errors",
    "selector_to_string",
    "strip_bulk",
    "structural_schema",
    "unserved_kinds",
    "write_crds",
]
