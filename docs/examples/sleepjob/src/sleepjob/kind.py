"""The kind: what jobcore's job reconciler asks of a SleepJob."""

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from jobcore import PODS
from jobcore import Object
from jobcore import Resource
from jobcore.jobs import FieldError
from jobcore.jobs import Job
from jobcore.jobs import Observed
from jobcore.jobs import Outcome
from sleepjob.children import WORKER
from sleepjob.children import pod
from sleepjob.spec import SleepJobSpec


class SleepJobKind:
    resource = Resource("example.com", "v1alpha1", "SleepJob", "sleepjobs")
    short_names: Sequence[str] = ("sj",)
    spec_model = SleepJobSpec
    replica_types: Sequence[str] = (WORKER,)
    child_resources: Sequence[Resource] = (PODS,)
    containers: Mapping[str, str] = {}  # the first container of each Pod
    debug_commands: Mapping[str, Sequence[str] | None] = {}  # sleep inf in debug mode
    kept_after_cleanup: Sequence[str] = ()
    printer_columns: Sequence[Mapping[str, Any]] = (
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    )

    def validate(self, job: Job[SleepJobSpec]) -> list[FieldError]:
        if len(job.name) > 50:
            return [FieldError("metadata.name", "must be at most 50 characters")]
        return []

    def replicas(self, job: Job[SleepJobSpec]) -> Mapping[str, int]:
        return {WORKER: job.spec.replicas}

    def render(self, job: Job[SleepJobSpec], observed: Observed) -> list[Object]:
        return [pod(job, i) for i in range(job.spec.replicas)]

    def interpret(self, job: Job[SleepJobSpec], observed: Observed) -> Outcome:
        pods = observed.pods_of(WORKER)
        phases = [(p.get("status") or {}).get("phase") for p in pods]
        if "Failed" in phases:
            failed = next(p for p in pods if p["status"]["phase"] == "Failed")
            return Outcome("failed", replica_failure=f"Pod[{failed['metadata']['name']}] failed")
        if len(pods) == job.spec.replicas and all(p == "Succeeded" for p in phases):
            return Outcome("succeeded")
        if phases and all(p in ("Running", "Succeeded") for p in phases):
            return Outcome("running")
        return Outcome("pending", "PodsStarting", "Waiting for the pods to start.")
