"""The job layer's hooks for a kind whose spec says its policy its own way (Kubeflow's
runPolicy and suspend): its `policy` hook, the deadline's start after a resume, `also` metrics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar
from typing import Literal

from pydantic import Field

from jobcore import Object
from jobcore import Resource
from jobcore._jobs.announce import Announcer
from jobcore._jobs.decide import running_since
from jobcore._jobs.models import JobCondition
from jobcore.jobs import ApiModel
from jobcore.jobs import Job
from jobcore.jobs import JobPolicy
from jobcore.jobs import JobSpec
from jobcore.jobs import JobStatus
from jobcore.jobs import KindHooks
from jobcore.jobs import PauseMode
from jobcore.jobs import RunMode
from jobcore.jobs import RunPolicy
from jobcore.jobs import parse_job
from jobcore.testing import ModelKind
from jobcore.testing import job_manifest
from jobcore.testing import job_of

CREATED = "2026-01-01T00:00:00Z"
RESUMED = "2026-01-01T01:00:00Z"


class OwnSpec(ApiModel):
    """A spec with its own words for pausing and time limits."""

    suspend: bool = False
    limit_seconds: int | None = Field(default=None, ge=1)


def own_policy(spec: OwnSpec) -> JobPolicy:
    mode = RunMode(pause=PauseMode(enabled=True)) if spec.suspend else None
    return JobPolicy(RunPolicy(active_deadline_seconds=spec.limit_seconds), run_mode=mode)


@dataclass(frozen=True)
class OwnKind(ModelKind[OwnSpec]):
    hooks: ClassVar[KindHooks] = KindHooks(policy=own_policy)


KIND = OwnKind(Resource("example.dev", "v1", "Own", "owns"), OwnSpec)


def manifest(**spec: object) -> Object:
    obj = job_manifest(KIND, spec, name="own", namespace="ns")
    obj["metadata"]["creationTimestamp"] = CREATED
    return obj


def test_a_kinds_policy_is_what_the_job_layer_obeys() -> None:
    job, errors = parse_job(KIND, manifest(suspend=True, limitSeconds=60))
    assert errors == []
    assert job is not None
    assert job.paused
    assert job.policy.run_policy.active_deadline_seconds == 60
    assert not job_of(KIND, manifest()).paused


def test_a_spec_without_a_policy_hook_is_read_from_its_jobspec_fields() -> None:
    plain = ModelKind(Resource("example.dev", "v1", "Plain", "plains"), JobSpec)
    obj = job_manifest(plain, {"runMode": {"pause": {"enabled": True}}}, name="p", namespace="ns")
    assert job_of(plain, obj).paused
    # A Job a plugin builds itself, without a policy, as plugins did before there were any.
    spec = JobSpec.model_validate(obj["spec"])
    assert Job(
        kind="Plain", name="p", namespace="ns", uid="", spec=spec, status=JobStatus(), obj=obj
    ).paused


def paused_at(time: str, status: Literal["True", "False"], reason: str) -> JobStatus:
    condition = JobCondition(type="Paused", status=status, reason=reason, last_transition_time=time)
    return JobStatus(conditions=[condition])


def test_the_deadline_counts_from_creation_then_from_the_last_resume() -> None:
    job = job_of(KIND, manifest(limitSeconds=60))
    assert running_since(job, JobStatus()) == CREATED
    # The pass that resumes a paused job: the count starts now.
    assert running_since(job, paused_at(CREATED, "True", "Paused")) is None
    assert running_since(job, paused_at(RESUMED, "False", "Resumed")) == RESUMED
    suspended = job_of(KIND, manifest(limitSeconds=60, suspend=True))
    assert running_since(suspended, paused_at(CREATED, "True", "Paused")) == CREATED


class _Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def emit(self, obj: Object, *, type: str, reason: str, message: str) -> None:
        self.events.append(reason)


def test_a_kinds_announce_runs_after_jobcores_own() -> None:
    seen: list[tuple[str | None, str | None]] = []
    recorder = _Recorder()
    announcer = Announcer(
        recorder,  # type: ignore[arg-type]
        "Own",
        also=lambda recorder, obj, previous, status: seen.append((previous.phase, status.phase)),
    )
    announcer.transitions(manifest(), JobStatus(), JobStatus(phase="Succeeded"))
    assert seen == [(None, "Succeeded")]
