"""A wide job costs one template: its pods share the template's parts, planning changes none of
those parts, a spec is parsed once per generation, and an oversized spec is refused."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from jobcore import PODS
from jobcore import Object
from jobcore._jobs.cached import MAX_SPEC_BYTES
from jobcore._jobs.models import PodTemplateSpec
from jobcore._jobs.parse import ParsedSpecs
from jobcore._jobs.plan import gang_scheduling
from jobcore._jobs.plan import plan
from jobcore._runtime.resources import ObjectKey
from jobcore.jobs import FieldError
from jobcore.jobs import Job
from jobcore.jobs import JobKind
from jobcore.jobs import Observed
from jobcore.jobs import ResumeSpec
from jobcore.jobs import Volcano
from jobcore.jobs import parse_job
from tests.support import kubeflowjobs
from tests.support.kindjobs import COLOSSALAIJOB
from tests.support.kindjobs import HOROVODJOB
from tests.support.kindjobs import MPIJOB
from tests.support.kindjobs import LauncherKind

READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
DEBUG = {
    "debug": {"enabled": True, "replicaSpecs": [{"type": "worker", "skipInitContainer": True}]}
}


def rich_template(main: str) -> Object:
    """A worker template with a part of every shape a kind or the planner adapts."""
    return {
        "metadata": {"labels": {"team": "a"}, "annotations": {"note": "kept"}},
        "spec": {
            "containers": [
                {
                    "name": main,
                    "image": "img",
                    "env": [{"name": "A", "value": "1"}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "readinessProbe": {"exec": {"command": ["true"]}},
                    "resources": {"limits": {"cpu": "1"}},
                },
                {"name": "sidecar", "image": "side", "env": [{"name": "B", "value": "2"}]},
            ],
            "initContainers": [{"name": "init", "image": "init"}],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "dnsConfig": {
                "searches": ["example.org"],
                "options": [{"name": "ndots", "value": "2"}],
            },
            "securityContext": {"runAsUser": 1000},
            "tolerations": [{"key": "k", "operator": "Exists"}],
        },
    }


def launcher_job(launcher: LauncherKind, **spec: Any) -> Object:
    obj = launcher.job("team", "wide", replicas=3, **spec)
    obj["spec"]["worker"]["template"] = rich_template(launcher.worker)
    obj["metadata"]["uid"] = "uid-1"
    return obj


def kubeflow_job() -> Object:
    obj = kubeflowjobs.mpijob("team", "wide", workers=3, mpiImplementation="MPICH")
    for replica, main in (("Launcher", "mpi-launcher"), ("Worker", "mpi-worker")):
        obj["spec"]["mpiReplicaSpecs"][replica]["template"] = rich_template(main)
    obj["metadata"]["uid"] = "uid-1"
    return obj


JOBS = {
    "mpijob-openmpi": (MPIJOB.kind, launcher_job(MPIJOB)),
    "mpijob-mpich": (MPIJOB.kind, launcher_job(MPIJOB, mpiImplementation="MPICH")),
    "mpijob-debug": (MPIJOB.kind, launcher_job(MPIJOB, runMode=DEBUG)),
    "horovodjob": (HOROVODJOB.kind, launcher_job(HOROVODJOB)),
    "colossalaijob": (COLOSSALAIJOB.kind, launcher_job(COLOSSALAIJOB)),
    "kubeflow-mpijob": (kubeflowjobs.KIND, kubeflow_job()),
}


def parsed(kind: JobKind[Any], obj: Object) -> Job[Any]:
    job, errors = parse_job(kind, obj)
    assert job is not None, errors
    return job


def templates(model: object) -> Iterator[PodTemplateSpec]:
    """Every pod template in a parsed spec."""
    if isinstance(model, PodTemplateSpec):
        yield model
    elif isinstance(model, BaseModel):
        for name in type(model).model_fields:
            yield from templates(getattr(model, name))
    elif isinstance(model, dict):
        for value in model.values():
            yield from templates(value)


def plans(kind: JobKind[Any], job: Job[Any]) -> list[list[Object]]:
    """The job planned as the reconciler may: new, with its workers Ready (the launcher too),
    after a resume, and under a gang scheduler."""
    first = plan(kind, job, Observed({}))
    ready = {o["metadata"]["name"]: {**o, "status": READY} for o in first if o["kind"] == "Pod"}
    resume = [
        ResumeSpec(type=t, command=["resumed"], skip_init_container=True)
        for t in ("worker", "launcher")
    ]
    gang, scheduler = gang_scheduling(job, Volcano())
    return [
        first,
        plan(kind, job, Observed({PODS: ready})),
        plan(kind, job, Observed({PODS: ready}), resume_specs=resume),
        plan(kind, gang, Observed({}), scheduler=scheduler),
    ]


@pytest.mark.parametrize("name", JOBS)
def test_planning_changes_no_part_of_the_template_its_pods_share(name: str) -> None:
    kind, obj = JOBS[name]
    job = parsed(kind, obj)
    shared = list(templates(job.spec))
    assert shared, "the job has a pod template"
    as_parsed = [copy.deepcopy(dict(template.api)) for template in shared]

    planned = plans(kind, job)

    assert [dict(template.api) for template in shared] == as_parsed
    assert [template.to_api() for template in shared] == as_parsed
    assert any(o["kind"] == "Pod" for o in planned[-1])


def test_the_workers_of_a_job_share_the_templates_parts_but_not_their_containers() -> None:
    kind, obj = JOBS["mpijob-openmpi"]
    workers = [
        o
        for o in plan(kind, parsed(kind, obj), Observed({}))
        if "-worker-" in o["metadata"]["name"]
    ]
    assert len(workers) == 3
    first, *others = (pod["spec"] for pod in workers)
    for spec in others:
        assert spec["tolerations"] is first["tolerations"]
        assert spec["containers"][0]["env"] is first["containers"][0]["env"]
        assert spec["containers"][0] is not first["containers"][0]
    assert first["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def with_generation(obj: Object, generation: int | None) -> Object:
    changed = copy.deepcopy(obj)
    if generation is not None:
        changed["metadata"]["generation"] = generation
    return changed


def test_a_spec_is_parsed_once_per_generation() -> None:
    kind, obj = JOBS["mpijob-openmpi"]
    specs = ParsedSpecs(kind)
    first, _ = specs.parse(with_generation(obj, 1))
    again, _ = specs.parse(with_generation(obj, 1))
    assert first is not None and again is not None
    assert again.spec is first.spec
    assert again.obj is not first.obj  # the object as it is now: status, metadata

    edited = with_generation(obj, 2)
    edited["spec"]["worker"]["replicas"] = 5
    changed, _ = specs.parse(edited)
    assert changed is not None and changed.spec.worker.replicas == 5

    specs.forget(ObjectKey("team", "wide"))
    assert specs.parse(with_generation(obj, 2))[0].spec is not changed.spec  # type: ignore[union-attr]


def test_an_invalid_spec_is_remembered_and_a_spec_without_generation_is_always_parsed() -> None:
    kind, obj = JOBS["mpijob-openmpi"]
    specs = ParsedSpecs(kind)
    invalid = with_generation(obj, 1)
    invalid["spec"]["worker"]["replicas"] = 0
    job, errors = specs.parse(invalid)
    assert job is None and errors
    assert specs.parse(with_generation(invalid, 1)) == (None, errors)

    unstored = [specs.parse(with_generation(obj, None))[0] for _ in range(2)]
    assert unstored[0] is not None and unstored[1] is not None
    assert unstored[0].spec is not unstored[1].spec


def test_a_spec_larger_than_the_controller_renders_is_refused_naming_the_limit() -> None:
    kind, obj = JOBS["mpijob-openmpi"]
    container = obj["spec"]["worker"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": f"E{i:05d}", "value": f"{i:06d}"} for i in range(10_000)]

    job, errors = parse_job(kind, obj)

    assert job is None
    assert len(errors) == 1 and errors[0].path == "spec"
    assert f"more than the {MAX_SPEC_BYTES:,} bytes the controller renders" in errors[0].message
    assert errors == [FieldError("spec", errors[0].message)]
