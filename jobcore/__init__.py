"""jobcore: a controller-runtime-style reconciler core for Kubernetes on asyncio.

This module is the runtime's public API: the API client, informer caches, the work queue,
controllers, the manager with leader election, probes, metrics, Events and logs. The job
layer that kinds plug into is `jobcore.jobs`; the helpers of kinds whose launcher pod reaches
sshd workers are `jobcore.launcher`; the test kit is `jobcore.testing`.

The code lives in three private packages, each a stack of layers that import-linter checks:

- `jobcore._runtime`: the runtime, knowing nothing of jobs.
- `jobcore._jobs`: the job layer, built on the runtime's public names and modules.
- `jobcore._launcher`: the launcher-over-ssh helpers, built on the job layer.

Only the names exported here, in `jobcore.jobs`, `jobcore.launcher` and `jobcore.testing`
are public; the lists are frozen by tests/unit/api/, so that growth shows in review.
"""

from jobcore._runtime.client import DEFAULT_MAX_CONNECTIONS
from jobcore._runtime.client import Client
from jobcore._runtime.client import PatchType
from jobcore._runtime.connlimits import ServerLimits
from jobcore._runtime.controller import Controller
from jobcore._runtime.controller import Reconciler
from jobcore._runtime.controller import Result
from jobcore._runtime.controller import reconciler_from
from jobcore._runtime.errors import AlreadyExistsError
from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import ConflictError
from jobcore._runtime.errors import ForbiddenError
from jobcore._runtime.errors import GoneError
from jobcore._runtime.errors import InvalidError
from jobcore._runtime.errors import JobcoreError
from jobcore._runtime.errors import LeaderElectionLost
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.errors import TerminalError
from jobcore._runtime.errors import WriteFenced
from jobcore._runtime.events import EventRecorder
from jobcore._runtime.expectations import Expectations
from jobcore._runtime.filing import CONTROLLER_UID_INDEX
from jobcore._runtime.filing import NAMESPACE_INDEX
from jobcore._runtime.filing import IndexFunc
from jobcore._runtime.filing import Keep
from jobcore._runtime.filing import Transform
from jobcore._runtime.filing import strip_bulk
from jobcore._runtime.gc import configure_gc
from jobcore._runtime.gc import configure_malloc
from jobcore._runtime.handler import EnqueueRequests
from jobcore._runtime.handler import Mapper
from jobcore._runtime.handler import Request
from jobcore._runtime.handler import request_for_object
from jobcore._runtime.handler import requests_for_owner
from jobcore._runtime.informer import Informer
from jobcore._runtime.labels import parse_selector
from jobcore._runtime.labels import selector_to_string
from jobcore._runtime.leaderelection import LeaderElectionConfig
from jobcore._runtime.leaderelection import LeaderElector
from jobcore._runtime.logs import configure_logging
from jobcore._runtime.logs import reconcile_context
from jobcore._runtime.manager import Manager
from jobcore._runtime.manager import Runnable
from jobcore._runtime.metrics import REGISTRY
from jobcore._runtime.predicate import FuncPredicate
from jobcore._runtime.predicate import GenerationChanged
from jobcore._runtime.predicate import LabelSelectorPredicate
from jobcore._runtime.predicate import Predicate
from jobcore._runtime.ratelimit import BucketRateLimiter
from jobcore._runtime.ratelimit import ItemExponentialFailureRateLimiter
from jobcore._runtime.ratelimit import MaxOfRateLimiter
from jobcore._runtime.ratelimit import RateLimiter
from jobcore._runtime.ratelimit import default_controller_rate_limiter
from jobcore._runtime.resources import BATCH_JOBS
from jobcore._runtime.resources import CONFIGMAPS
from jobcore._runtime.resources import CUSTOM_RESOURCE_DEFINITIONS
from jobcore._runtime.resources import EVENTS
from jobcore._runtime.resources import LEASES
from jobcore._runtime.resources import NAMESPACES
from jobcore._runtime.resources import NODES
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import PRIORITY_CLASSES
from jobcore._runtime.resources import SECRETS
from jobcore._runtime.resources import SERVICES
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore._runtime.resources import Resource
from jobcore._runtime.resources import controller_of
from jobcore._runtime.resources import owner_reference
from jobcore._runtime.server import HealthChecks
from jobcore._runtime.server import ProbeServer
from jobcore._runtime.store import EventHandler
from jobcore._runtime.watchstream import WatchEvent
from jobcore._runtime.workqueue import QueueShutDown
from jobcore._runtime.workqueue import WorkQueue

__all__ = [
    "BATCH_JOBS",
    "CONFIGMAPS",
    "CONTROLLER_UID_INDEX",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "DEFAULT_MAX_CONNECTIONS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "NAMESPACE_INDEX",
    "NODES",
    "PODS",
    "PRIORITY_CLASSES",
    "REGISTRY",
    "SECRETS",
    "SERVICES",
    "AlreadyExistsError",
    "ApiError",
    "BucketRateLimiter",
    "Client",
    "ConflictError",
    "Controller",
    "EnqueueRequests",
    "EventHandler",
    "EventRecorder",
    "Expectations",
    "ForbiddenError",
    "FuncPredicate",
    "GenerationChanged",
    "GoneError",
    "HealthChecks",
    "IndexFunc",
    "Informer",
    "InvalidError",
    "ItemExponentialFailureRateLimiter",
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
    "PatchType",
    "Predicate",
    "ProbeServer",
    "QueueShutDown",
    "RateLimiter",
    "Reconciler",
    "Request",
    "Resource",
    "Result",
    "Runnable",
    "ServerLimits",
    "TerminalError",
    "Transform",
    "WatchEvent",
    "WorkQueue",
    "WriteFenced",
    "configure_gc",
    "configure_logging",
    "configure_malloc",
    "controller_of",
    "default_controller_rate_limiter",
    "owner_reference",
    "parse_selector",
    "reconcile_context",
    "reconciler_from",
    "request_for_object",
    "requests_for_owner",
    "selector_to_string",
    "strip_bulk",
]
