"""The job layer's public API: what a job kind plugin implements and uses.

A kind implements `JobKind`: its spec model (an `ApiModel`, usually a `JobSpec` with
`PodTemplateSpec`s and a `RunPolicy`), the children it renders for a `Job` from what is
`Observed`, and the `Outcome` it decides; optional parts are one `KindHooks`. The generic
reconciler (`add_job_controller`) does the rest. Helpers for any kind: reading its pods
(`pod_phase`, `is_ready`, `failure_message`, `pod_failures`, `pod_problems`), its workers'
names behind a headless Service (`worker_name`, `worker_host`, `headless_service`), and checks
of its name and worker template (`job_name_errors`, `container_errors`). Runtime names a kind
needs too (`Object`, `PODS`, `owner_reference`...) come from `jobcore`; the helpers of a
launcher that reaches its workers over ssh from `jobcore.launcher`.
"""

from jobcore._jobs.controller import add_job_controller
from jobcore._jobs.crd import crd_for
from jobcore._jobs.crd import structural_schema
from jobcore._jobs.crd import write_crds
from jobcore._jobs.hooks import NO_HOOKS
from jobcore._jobs.hooks import KindHooks
from jobcore._jobs.hooks import hooks_of
from jobcore._jobs.jobchecks import container_errors
from jobcore._jobs.jobchecks import job_name_errors
from jobcore._jobs.jobchecks import unique_name_errors
from jobcore._jobs.kind import DEFAULT_AGENT
from jobcore._jobs.kind import DEFAULT_CLUSTER_DOMAIN
from jobcore._jobs.kind import JOB_KIND_LABEL
from jobcore._jobs.kind import JOB_NAME_LABEL
from jobcore._jobs.kind import REPLICA_INDEX_LABEL
from jobcore._jobs.kind import REPLICA_TYPE_LABEL
from jobcore._jobs.kind import AgentSource
from jobcore._jobs.kind import FieldError
from jobcore._jobs.kind import GangPolicy
from jobcore._jobs.kind import Job
from jobcore._jobs.kind import JobKind
from jobcore._jobs.kind import JobPolicy
from jobcore._jobs.kind import Observed
from jobcore._jobs.kind import Outcome
from jobcore._jobs.kindcheck import InvalidKindError
from jobcore._jobs.kindcheck import check_kind
from jobcore._jobs.kueueapi import LOCAL_QUEUES as KUEUE_LOCAL_QUEUES
from jobcore._jobs.kueueapi import RESOURCE_FLAVORS as KUEUE_RESOURCE_FLAVORS
from jobcore._jobs.kueueapi import WORKLOAD_PRIORITY_CLASSES as KUEUE_WORKLOAD_PRIORITY_CLASSES
from jobcore._jobs.kueueapi import WORKLOADS as KUEUE_WORKLOADS
from jobcore._jobs.kueuescope import KueueScope
from jobcore._jobs.models import ApiModel
from jobcore._jobs.models import CleanUpPolicy
from jobcore._jobs.models import Container
from jobcore._jobs.models import JobSpec
from jobcore._jobs.models import JobStatus
from jobcore._jobs.models import OpenModel
from jobcore._jobs.models import PauseMode
from jobcore._jobs.models import PodSpec
from jobcore._jobs.models import PodTemplateSpec
from jobcore._jobs.models import RestartPolicy
from jobcore._jobs.models import ResumeSpec
from jobcore._jobs.models import RunMode
from jobcore._jobs.models import RunPolicy
from jobcore._jobs.models import SchedulerPolicy
from jobcore._jobs.parse import parse_job
from jobcore._jobs.plan import RUN_MODE_LABEL
from jobcore._jobs.plan import PlannedChildren
from jobcore._jobs.plan import UnservedChildren
from jobcore._jobs.plan import plan_children
from jobcore._jobs.plan import run_mode_errors
from jobcore._jobs.podreading import clip
from jobcore._jobs.podreading import failure_message
from jobcore._jobs.podreading import is_ready
from jobcore._jobs.podreading import name_list
from jobcore._jobs.podreading import pod_failures
from jobcore._jobs.podreading import pod_problems
from jobcore._jobs.podstate import pod_ended
from jobcore._jobs.podstate import pod_phase
from jobcore._jobs.queueing import kueue_served
from jobcore._jobs.reconciler import JobReconciler
from jobcore._jobs.retries import RETRY_BACKOFF
from jobcore._jobs.retries import RetryBackoff
from jobcore._jobs.scheduling import GangScheduler
from jobcore._jobs.scheduling import SchedulerPlugins
from jobcore._jobs.scheduling import T9kScheduler
from jobcore._jobs.scheduling import Volcano
from jobcore._jobs.scheduling import summed_requests
from jobcore._jobs.status import INVALID_SPEC
from jobcore._jobs.status import parse_time
from jobcore._jobs.statuspart import T9K_STATUS
from jobcore._jobs.statuspart import StatusPart
from jobcore._jobs.statuspart import T9kStatus
from jobcore._jobs.workers import child_meta
from jobcore._jobs.workers import headless_service
from jobcore._jobs.workers import worker_host
from jobcore._jobs.workers import worker_name

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_CLUSTER_DOMAIN",
    "INVALID_SPEC",
    "JOB_KIND_LABEL",
    "JOB_NAME_LABEL",
    "KUEUE_LOCAL_QUEUES",
    "KUEUE_RESOURCE_FLAVORS",
    "KUEUE_WORKLOADS",
    "KUEUE_WORKLOAD_PRIORITY_CLASSES",
    "NO_HOOKS",
    "REPLICA_INDEX_LABEL",
    "REPLICA_TYPE_LABEL",
    "RETRY_BACKOFF",
    "RUN_MODE_LABEL",
    "T9K_STATUS",
    "AgentSource",
    "ApiModel",
    "CleanUpPolicy",
    "Container",
    "FieldError",
    "GangPolicy",
    "GangScheduler",
    "InvalidKindError",
    "Job",
    "JobKind",
    "JobPolicy",
    "JobReconciler",
    "JobSpec",
    "JobStatus",
    "KindHooks",
    "KueueScope",
    "Observed",
    "OpenModel",
    "Outcome",
    "PauseMode",
    "PlannedChildren",
    "PodSpec",
    "PodTemplateSpec",
    "RestartPolicy",
    "ResumeSpec",
    "RetryBackoff",
    "RunMode",
    "RunPolicy",
    "SchedulerPlugins",
    "SchedulerPolicy",
    "StatusPart",
    "T9kScheduler",
    "T9kStatus",
    "UnservedChildren",
    "Volcano",
    "add_job_controller",
    "check_kind",
    "child_meta",
    "clip",
    "container_errors",
    "crd_for",
    "failure_message",
    "headless_service",
    "hooks_of",
    "is_ready",
    "job_name_errors",
    "kueue_served",
    "name_list",
    "parse_job",
    "parse_time",
    "plan_children",
    "pod_ended",
    "pod_failures",
    "pod_phase",
    "pod_problems",
    "run_mode_errors",
    "structural_schema",
    "summed_requests",
    "unique_name_errors",
    "worker_host",
    "worker_name",
    "write_crds",
]
