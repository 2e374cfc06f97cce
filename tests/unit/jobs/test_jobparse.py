"""jobcore.parse_job, adopt, gang_scheduling and pod_group: the reconciler's steps, shared."""

from __future__ import annotations

import copy
from typing import Any

from jobcore import Object
from jobcore._jobs.managedby import cached_jobs
from jobcore._jobs.managedby import jobcore_runs
from jobcore._jobs.parse import run_policy_of
from jobcore._jobs.plan import adopt
from jobcore._jobs.plan import gang_scheduling
from jobcore._jobs.plan import plan
from jobcore._jobs.plan import pod_group
from jobcore.jobs import JOB_KIND_LABEL
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import JobStatus
from jobcore.jobs import Observed
from jobcore.jobs import T9kScheduler
from jobcore.jobs import Volcano
from jobcore.jobs import parse_job
from jobkinds.kubeflow import KubeflowMPIJobKind
from jobkinds.mpijob import MPIJobKind

KIND = MPIJobKind()


def mpijob(**spec: Any) -> Object:
    worker = {
        "replicas": 2,
        "cmd": ["./hello"],
        "template": {"spec": {"containers": [{"name": "mpi-worker", "image": "mpi"}]}},
    }
    return {
        "apiVersion": KIND.resource.api_version,
        "kind": KIND.resource.kind,
        "metadata": {"name": "job", "namespace": "team", "uid": "u-1"},
        "spec": {"worker": worker, **spec},
    }


def test_a_valid_job_parses_with_its_identity_and_a_fresh_status() -> None:
    obj = mpijob()
    job, errors = parse_job(KIND, obj)
    assert errors == []
    assert job is not None
    assert (job.kind, job.name, job.namespace, job.uid) == ("MPIJob", "job", "team", "u-1")
    assert job.spec.worker.replicas == 2
    assert job.status == JobStatus()
    assert job.obj is obj


def test_the_given_status_is_the_jobs() -> None:
    status = JobStatus(phase="Running")
    job, _ = parse_job(KIND, mpijob(), status)
    assert job is not None and job.status is status


def test_schema_errors_are_field_paths_under_spec() -> None:
    obj = mpijob()
    obj["spec"]["worker"]["replicas"] = 0
    obj["spec"]["worker"]["extra"] = 1
    job, errors = parse_job(KIND, obj)
    assert job is None
    assert [str(error) for error in errors] == [
        "spec.worker.replicas: Input should be greater than or equal to 1",
        "spec.worker.extra: Extra inputs are not permitted",
    ]


def test_managed_by_is_a_domain_prefixed_path_as_for_a_kubernetes_job() -> None:
    for value in ("kueue.x-k8s.io/multikueue", "batch.tensorstack.dev/jobcore", "a.io/x/y"):
        assert parse_job(KIND, mpijob(managedBy=value))[1] == [], value
    for value in ("multikueue", "Example.com/x", "example.com/", "a.io/" + "x" * 59):
        assert [e.path for e in parse_job(KIND, mpijob(managedBy=value))[1]] == [
            "spec.managedBy"
        ], value
    # jobcore's own value, or none, is jobcore's job; any other, another controller's.
    assert jobcore_runs(mpijob()) and jobcore_runs(
        mpijob(managedBy="batch.tensorstack.dev/jobcore")
    )
    assert not jobcore_runs(mpijob(managedBy="kueue.x-k8s.io/multikueue"))
    cached = cached_jobs(jobcore_runs, queued=True)
    assert cached(mpijob(managedBy="kueue.x-k8s.io/multikueue"))  # its Workload is kept here
    assert not cached(mpijob(managedBy="example.com/other"))
    assert not cached_jobs(jobcore_runs, queued=False)(
        mpijob(managedBy="kueue.x-k8s.io/multikueue")
    )


def test_run_mode_and_kind_checks_follow_the_schema() -> None:
    obj = mpijob(runMode={"debug": {"enabled": True, "replicaSpecs": [{"type": "master"}]}})
    obj["metadata"]["name"] = "a.b"
    job, errors = parse_job(KIND, obj)
    assert job is None
    assert [error.path for error in errors] == [
        "spec.runMode.debug.replicaSpecs[0].type",
        "metadata.name",
    ]


def test_a_missing_namespace_or_uid_reads_as_empty() -> None:
    obj = mpijob()
    obj["metadata"] = {"name": "job"}
    job, _ = parse_job(KIND, obj)
    assert job is not None and (job.namespace, job.uid) == ("", "")


def test_adopt_puts_namespace_labels_and_the_controller_reference() -> None:
    job, _ = parse_job(KIND, mpijob())
    assert job is not None
    child = {"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"own": "x"}}}
    assert adopt(job, child) is child
    assert child["metadata"] == {
        "name": "c",
        "namespace": "team",
        "labels": {"own": "x", JOB_NAME_LABEL: "job", JOB_KIND_LABEL: "MPIJob"},
        "ownerReferences": [
            {
                "apiVersion": "batch.tensorstack.dev/v1beta1",
                "kind": "MPIJob",
                "name": "job",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }


def test_gang_scheduling_prefers_the_jobs_own_t9k_request() -> None:
    job, _ = parse_job(KIND, mpijob(scheduler={"t9kScheduler": {"queue": "q"}}))
    assert job is not None
    ganged, scheduler = gang_scheduling(job, Volcano())
    assert isinstance(scheduler, T9kScheduler)
    assert ganged.gang and not job.gang


def test_gang_scheduling_uses_the_default_else_none() -> None:
    job, _ = parse_job(KIND, mpijob())
    assert job is not None
    default = Volcano()
    assert gang_scheduling(job, default)[1] is default
    assert gang_scheduling(job, None) == (job, None)


def test_a_paused_job_has_no_gang() -> None:
    job, _ = parse_job(KIND, mpijob(runMode={"pause": {"enabled": True}}))
    assert job is not None
    assert gang_scheduling(job, Volcano()) == (job, None)


def test_pod_group_counts_the_job_at_full_strength_and_is_adopted() -> None:
    job, _ = parse_job(KIND, mpijob(scheduler={"t9kScheduler": {"queue": "q", "priority": 3}}))
    assert job is not None
    job, scheduler = gang_scheduling(job, None)
    assert scheduler is not None
    desired = plan(KIND, job, Observed({}), scheduler=scheduler)
    before = copy.deepcopy(desired)
    group = pod_group(KIND, job, scheduler, desired)
    assert group["kind"] == "PodGroup"
    assert group["spec"] == {"minMember": 3, "queue": "q", "priority": 3}
    assert group["metadata"]["namespace"] == "team"
    assert group["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert desired == before


def test_an_invalid_jobs_run_policy_is_read_alone_as_its_kind_says_it() -> None:
    invalid = mpijob(runPolicy={"cleanUpPolicy": "All"}, worker="not a worker")
    assert parse_job(KIND, invalid)[0] is None
    assert run_policy_of(KIND, invalid).clean_up_policy == "All"
    kubeflow: Object = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "job", "namespace": "team", "uid": "u-2"},
        "spec": {"runPolicy": {"cleanPodPolicy": "Running"}, "mpiReplicaSpecs": 3},
    }
    assert parse_job(KubeflowMPIJobKind(), kubeflow)[0] is None
    assert run_policy_of(KubeflowMPIJobKind(), kubeflow).clean_up_policy == "Unfinished"
    kubeflow["spec"]["runPolicy"] = {"cleanPodPolicy": "Sometimes"}
    assert run_policy_of(KubeflowMPIJobKind(), kubeflow).clean_up_policy is None
