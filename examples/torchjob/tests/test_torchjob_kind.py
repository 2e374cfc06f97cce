"""The TorchJob kind on plain objects: validation, children, env, and outcomes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobcore import PODS
from jobcore import SERVICES
from jobcore import Object
from jobcore.jobs import Job
from jobcore.jobs import JobKind
from jobcore.jobs import JobStatus
from jobcore.jobs import Observed
from jobcore.jobs import Outcome
from jobcore.jobs import crd_for
from jobcore.jobs import plan_children
from torchjob import TorchJobKind
from torchjob import TorchJobSpec

KIND: JobKind[TorchJobSpec] = TorchJobKind()  # mypy checks the protocol here
SAMPLE = Path(__file__).resolve().parents[1] / "torchjob-sample.yaml"


def torchjob(name: str = "train", *, replicas: int = 2) -> Object:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "torch", "command": ["run"]}]}}
    return {
        "apiVersion": "examples.jobcore.dev/v1alpha1",
        "kind": "TorchJob",
        "metadata": {"name": name, "namespace": "team-a", "uid": "uid-1"},
        "spec": {
            "master": {"template": copy.deepcopy(template)},
            "worker": {"replicas": replicas, "template": copy.deepcopy(template)},
        },
    }


def job_of(raw: Object) -> Job[TorchJobSpec]:
    return Job(
        kind="TorchJob",
        name=raw["metadata"]["name"],
        namespace=raw["metadata"].get("namespace", "team-a"),
        uid="uid-1",
        spec=TorchJobSpec.model_validate(raw["spec"]),
        status=JobStatus(),
        obj=raw,
    )


def env_of(pod: Object) -> dict[str, str]:
    (container,) = pod["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"]}


def pod(name: str, phase: str, *, exit_code: int | None = None, **status: Any) -> Object:
    state = {"terminated": {"exitCode": exit_code}} if exit_code is not None else {"running": {}}
    return {
        "metadata": {"name": name},
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": "pytorch", "state": state}],
            **status,
        },
    }


def observed(*pods: Object) -> Observed:
    return Observed({PODS: {p["metadata"]["name"]: p for p in pods}})


# Validation ------------------------------------------------------------------------------


def test_the_sample_is_valid() -> None:
    raw = yaml.safe_load(SAMPLE.read_text())
    raw["metadata"]["namespace"] = "default"
    assert KIND.validate(job_of(raw)) == []


def test_each_template_needs_a_pytorch_container_with_an_image() -> None:
    raw = torchjob()
    raw["spec"]["master"]["template"]["spec"]["containers"][0]["name"] = "main"
    del raw["spec"]["worker"]["template"]["spec"]["containers"][0]["image"]
    assert [str(e) for e in KIND.validate(job_of(raw))] == [
        'spec.master.template.spec.containers: needs a container named "pytorch"',
        "spec.worker.template.spec.containers[0].image: is required",
    ]


def test_the_jobs_env_and_restarts_are_not_the_templates() -> None:
    raw = torchjob()
    worker = raw["spec"]["worker"]["template"]["spec"]
    worker["containers"][0]["env"] = [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "RANK"}]
    worker["restartPolicy"] = "OnFailure"
    assert [e.path for e in KIND.validate(job_of(raw))] == [
        "spec.worker.template.spec.containers[0].env[1].name",
        "spec.worker.template.spec.restartPolicy",
    ]


def test_the_name_must_make_valid_hostnames() -> None:
    errors = KIND.validate(job_of(torchjob("Train_" + "x" * 60)))
    assert [e.path for e in errors] == ["metadata.name", "metadata.name"]
    assert "too long" in errors[1].message


def test_the_crd_requires_master_and_worker() -> None:
    schema = crd_for(KIND)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert set(schema["properties"]["spec"]["required"]) == {"master", "worker"}


def test_the_schema_rejects_a_job_without_workers() -> None:
    with pytest.raises(ValueError, match="worker"):
        TorchJobSpec.model_validate({"master": torchjob()["spec"]["master"]})


# Render ----------------------------------------------------------------------------------


def test_every_child_is_rendered_at_once_with_the_ranks_env() -> None:
    children = KIND.render(job_of(torchjob()), Observed({}))
    assert [(c["kind"], c["metadata"]["name"]) for c in children] == [
        ("Service", "train"),
        ("Pod", "train-master-0"),
        ("Pod", "train-worker-0"),
        ("Pod", "train-worker-1"),
    ]
    service, master, *workers = children
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    for rank, p in enumerate([master, *workers]):
        assert p["spec"]["subdomain"] == "train"
        assert p["spec"]["hostname"] == p["metadata"]["name"]
        assert p["spec"]["restartPolicy"] == "Never"
        assert p["spec"]["containers"][0]["command"] == ["run"], "the user's command, unchanged"
        assert env_of(p) == {
            "MASTER_ADDR": "train-master-0.train.team-a.svc",
            "MASTER_PORT": "29500",
            "WORLD_SIZE": "3",
            "RANK": str(rank),
            "PET_MASTER_ADDR": "train-master-0.train.team-a.svc",
            "PET_MASTER_PORT": "29500",
            "PET_NNODES": "3",
            "PET_NODE_RANK": str(rank),
        }
    assert service["spec"]["selector"].items() <= master["metadata"]["labels"].items()


def test_the_users_env_and_labels_are_kept() -> None:
    raw = torchjob(replicas=1)
    template = raw["spec"]["worker"]["template"]
    template["metadata"] = {"labels": {"team": "a"}}
    template["spec"]["containers"][0]["env"] = [{"name": "NCCL_DEBUG", "value": "INFO"}]
    worker = KIND.render(job_of(raw), Observed({}))[-1]
    assert worker["metadata"]["labels"]["team"] == "a"
    assert worker["metadata"]["labels"]["jobcore.dev/replica-type"] == "worker"
    assert env_of(worker)["NCCL_DEBUG"] == "INFO"


def test_render_is_pure() -> None:
    job = job_of(torchjob())
    assert KIND.render(job, Observed({})) == KIND.render(job, observed(pod("x", "Running")))


def test_debug_mode_sleeps_in_the_pytorch_container() -> None:
    raw = torchjob()
    raw["spec"]["runMode"] = {"debug": {"enabled": True}}
    children = plan_children(KIND, job_of(raw), Observed({}), None).desired
    pods = [c for c in children if c["kind"] == "Pod"]
    assert [p["spec"]["containers"][0]["command"] for p in pods] == [["sleep", "inf"]] * 3
    assert {c["kind"] for c in children} == {"Service", "Pod"}
    assert all(r in KIND.child_resources for r in (SERVICES, PODS))


# Interpret -------------------------------------------------------------------------------


def test_pending_until_every_pod_runs() -> None:
    outcome = KIND.interpret(
        job_of(torchjob()), observed(pod("train-master-0", "Running"), pod("train-worker-0", "X"))
    )
    assert outcome == Outcome(
        "pending",
        "PodsStarting",
        "Waiting for 2 Pod(s) to start: train-worker-0, train-worker-1.",
    )


def test_running_while_every_pod_runs() -> None:
    pods = [pod(n, "Running") for n in ("train-master-0", "train-worker-0", "train-worker-1")]
    assert KIND.interpret(job_of(torchjob()), observed(*pods)).state == "running"


def test_the_master_exit_decides() -> None:
    job = job_of(torchjob())
    done = pod("train-master-0", "Succeeded", exit_code=0)
    assert KIND.interpret(job, observed(done)).state == "succeeded"
    failed = pod("train-master-0", "Failed", exit_code=2)
    assert KIND.interpret(job, observed(failed)) == Outcome(
        "failed",
        "Failed",
        "The master exited with an error code.",
        replica_failure="Pod[train-master-0] exited with error code 2 (container pytorch)",
    )


def test_a_worker_that_fails_first_fails_the_job() -> None:
    job = job_of(torchjob())
    pods = [
        pod("train-master-0", "Running"),
        pod("train-worker-0", "Succeeded", exit_code=0),  # a rank may end first
        pod("train-worker-1", "Failed", reason="Evicted"),
    ]
    outcome = KIND.interpret(job, observed(*pods[:2]))
    assert outcome.state == "pending"
    outcome = KIND.interpret(job, observed(*pods))
    assert (outcome.state, outcome.message, outcome.replica_failure) == (
        "failed",
        "A worker failed before the master finished.",
        "Pod[train-worker-1] failed: Evicted",
    )
