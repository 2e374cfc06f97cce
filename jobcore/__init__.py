"""jobcore: a controller-runtime-style reconciler core for Kubernetes on asyncio.

Modules, from the bottom up:

- `_resources`, `_errors`: resource names and paths, object keys, the exception hierarchy.
- `_client`, `_json`, `_retry`, `_watchstream`: the API client over plain JSON objects, its
  JSON codec, when it retries a failure, and a watch's stream read as events.
- `_informer`, `_compact`: list+watch caches with indexers, their objects sharing equal
  parts; `_labels`: label selectors.
- `_queue`, `_ratelimit`: the deduplicating, rate-limited work queue.
- `_handler`, `_predicate`: from cache events to reconcile requests.
- `_controller`: workers that drain a queue into a `Reconciler`.
- `_leaderelection`, `_server`, `_metrics`, `_events`, `_expectations`, `_logging`,
  `_gc`, `_loopmonitor`: what a production controller process needs around its reconcilers.
- `_manager`: runs all of the above as one process.
- `_jobmodels`, `_jobkind`, `_jobstatus`, `_jobtasks`, `_crd`: the job layer's T9k job API
  models, the `JobKind` plugin interface, status derivation (the tasks bounded in size), and
  CRD generation from the models.
- `_jobreconciler`: the generic reconciler that drives any kind, one pass as a list of steps:
  read (`_jobparse`, `_jobwriter`, `_jobchildren`), decide (`_jobdecide`, `_jobplan`,
  `_jobpolicy`, `_jobbackoff`, `_scheduling`, `_quantity`), act on children (`_jobchildren`,
  `_jobrefusals`), derive and write the status (`_jobstatus`, `_jobwriter`), announce
  (`_jobannounce`).
- `testing`: a real control plane, a simulated node and a pytest plugin (public).

Everything a plugin may use is imported here; the underscored modules are private.
"""

from jobcore._client import DEFAULT_MAX_CONNECTIONS
from jobcore._client import Client
from jobcore._client import PatchType
from jobcore._controller import Controller
from jobcore._controller import Reconciler
from jobcore._controller import Result
from jobcore._controller import reconciler_from
from jobcore._crd import crd_for
from jobcore._crd import structural_schema
from jobcore._crd import write_crds
from jobcore._errors import AlreadyExistsError
from jobcore._errors import ApiError
from jobcore._errors import ConflictError
from jobcore._errors import ForbiddenError
from jobcore._errors import GoneError
from jobcore._errors import InvalidError
from jobcore._errors import JobcoreError
from jobcore._errors import LeaderElectionLost
from jobcore._errors import NotFoundError
from jobcore._errors import TerminalError
from jobcore._events import EventRecorder
from jobcore._expectations import Expectations
from jobcore._gc import configure_gc
from jobcore._handler import EnqueueRequests
from jobcore._handler import Mapper
from jobcore._handler import Request
from jobcore._handler import request_for_object
from jobcore._handler import requests_for_owner
from jobcore._informer import CONTROLLER_UID_INDEX
from jobcore._informer import NAMESPACE_INDEX
from jobcore._informer import EventHandler
from jobcore._informer import IndexFunc
from jobcore._informer import Informer
from jobcore._informer import Keep
from jobcore._informer import Transform
from jobcore._informer import strip_bulk
from jobcore._jobbackoff import RETRY_BACKOFF
from jobcore._jobbackoff import RetryBackoff
from jobcore._jobcontroller import add_job_controller
from jobcore._jobkind import DEFAULT_CLUSTER_DOMAIN
from jobcore._jobkind import JOB_KIND_LABEL
from jobcore._jobkind import JOB_NAME_LABEL
from jobcore._jobkind import REPLICA_INDEX_LABEL
from jobcore._jobkind import REPLICA_TYPE_LABEL
from jobcore._jobkind import FieldError
from jobcore._jobkind import GangPolicy
from jobcore._jobkind import Job
from jobcore._jobkind import JobKind
from jobcore._jobkind import JobPolicy
from jobcore._jobkind import Observed
from jobcore._jobkind import Outcome
from jobcore._jobmodels import ApiModel
from jobcore._jobmodels import CleanUpPolicy
from jobcore._jobmodels import Container
from jobcore._jobmodels import JobSpec
from jobcore._jobmodels import JobStatus
from jobcore._jobmodels import OpenModel
from jobcore._jobmodels import PauseMode
from jobcore._jobmodels import PodSpec
from jobcore._jobmodels import PodTemplateSpec
from jobcore._jobmodels import RestartPolicy
from jobcore._jobmodels import ResumeSpec
from jobcore._jobmodels import RunMode
from jobcore._jobmodels import RunPolicy
from jobcore._jobmodels import SchedulerPolicy
from jobcore._jobparse import parse_job
from jobcore._jobplan import RUN_MODE_LABEL
from jobcore._jobplan import adopt
from jobcore._jobplan import gang_scheduling
from jobcore._jobplan import plan
from jobcore._jobplan import pod_group
from jobcore._jobplan import run_mode_errors
from jobcore._jobplan import unserved_kinds
from jobcore._jobreconciler import JobReconciler
from jobcore._jobstatus import INVALID_SPEC
from jobcore._jobstatus import parse_time
from jobcore._labels import parse_selector
from jobcore._labels import selector_to_string
from jobcore._leaderelection import LeaderElectionConfig
from jobcore._leaderelection import LeaderElector
from jobcore._logging import configure_logging
from jobcore._logging import reconcile_context
from jobcore._manager import Manager
from jobcore._manager import Runnable
from jobcore._metrics import REGISTRY
from jobcore._predicate import FuncPredicate
from jobcore._predicate import GenerationChanged
from jobcore._predicate import LabelSelectorPredicate
from jobcore._predicate import Predicate
from jobcore._queue import QueueShutDown
from jobcore._queue import WorkQueue
from jobcore._ratelimit import BucketRateLimiter
from jobcore._ratelimit import ItemExponentialFailureRateLimiter
from jobcore._ratelimit import MaxOfRateLimiter
from jobcore._ratelimit import RateLimiter
from jobcore._ratelimit import default_controller_rate_limiter
from jobcore._resources import BATCH_JOBS
from jobcore._resources import CONFIGMAPS
from jobcore._resources import CUSTOM_RESOURCE_DEFINITIONS
from jobcore._resources import EVENTS
from jobcore._resources import LEASES
from jobcore._resources import NAMESPACES
from jobcore._resources import NODES
from jobcore._resources import PODS
from jobcore._resources import SECRETS
from jobcore._resources import SERVICES
from jobcore._resources import Object
from jobcore._resources import ObjectKey
from jobcore._resources import Resource
from jobcore._resources import controller_of
from jobcore._resources import owner_reference
from jobcore._scheduling import GangScheduler
from jobcore._scheduling import SchedulerPlugins
from jobcore._scheduling import T9kScheduler
from jobcore._scheduling import Volcano
from jobcore._scheduling import summed_requests
from jobcore._server import HealthChecks
from jobcore._server import ProbeServer
from jobcore._statuspart import T9K_STATUS
from jobcore._statuspart import StatusPart
from jobcore._statuspart import T9kStatus
from jobcore._statuspart import status_part
from jobcore._watchstream import WatchEvent

__all__ = [
    "BATCH_JOBS",
    "CONFIGMAPS",
    "CONTROLLER_UID_INDEX",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "DEFAULT_CLUSTER_DOMAIN",
    "DEFAULT_MAX_CONNECTIONS",
    "EVENTS",
    "INVALID_SPEC",
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
    "RETRY_BACKOFF",
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
    "GangPolicy",
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
    "JobPolicy",
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
    "PauseMode",
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
    "RetryBackoff",
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
    "parse_time",
    "plan",
    "pod_group",
    "reconcile_context",
    "reconciler_from",
    "request_for_object",
    "requests_for_owner",
    "run_mode_errors",
    "selector_to_string",
    "status_part",
    "strip_bulk",
    "structural_schema",
    "summed_requests",
    "unserved_kinds",
    "write_crds",
]
