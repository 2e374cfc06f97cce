"""A job's Kueue Workload as the job layer builds it: Kueue's name, pod sets from the kind's
own render, owner, finalizer and queue; the comparison that decides a rebuild; and what an
admission merges into the pods."""

from __future__ import annotations

import copy
from typing import Any
from typing import cast

import pytest

from jobcore import Object
from jobcore._jobs.admission import AdmissionConflict
from jobcore._jobs.admission import admit_pod
from jobcore._jobs.admission import admitted_pod_sets
from jobcore._jobs.kind import PodSetInfo
from jobcore._jobs.kueueapi import JOB_UID_LABEL
from jobcore._jobs.kueueapi import POD_SET_LABEL
from jobcore._jobs.kueueapi import RESOURCE_IN_USE_FINALIZER
from jobcore._jobs.queueing import Queueing
from jobcore._jobs.workload import new_workload
from jobcore._jobs.workload import pod_sets
from jobcore._jobs.workload import queue_name
from jobcore._jobs.workload import same_pod_sets
from jobcore._jobs.workload import workload_name
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import Job
from jobcore.testing import job_manifest
from jobcore.testing import job_of
from jobcore.testing import observed_of
from jobcore.testing import spec_with
from jobkinds.mpijob import MPIJobKind
from jobkinds.mpijob.spec import MPIJobSpec
from tests.support.jobdocs import sample

KIND = MPIJobKind()
GROUP = KIND.resource.group


def make_job(**changes: object) -> Job[MPIJobSpec]:
    spec = spec_with(sample("mpijob-random-walk")["spec"], **changes)
    manifest = job_manifest(KIND, spec, name="walk", namespace="team-a")
    manifest["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a-queue"}
    return job_of(KIND, manifest)


def test_the_name_is_kueues_for_the_same_owner() -> None:
    # Kueue's own examples (pkg/controller/jobframework/workload_names_test.go).
    assert workload_name("Job", "batch", "name", "uid") == "job-name-ef3a1"
    long = "x" * 300
    name = workload_name("Job", "batch", long, "uid")
    assert len(name) == 253 and name.startswith("job-xxx") and name[-6] == "-"
    assert workload_name("Job", "batch", "name", "uid2") != "job-name-ef3a1"


def test_pod_sets_are_the_launcher_and_the_workers_with_their_templates() -> None:
    job = make_job(worker={"replicas": 3})
    launcher, workers = pod_sets(KIND, job)
    assert (launcher["name"], launcher["count"]) == ("launcher", 1)
    assert (workers["name"], workers["count"]) == ("worker", 3)
    assert "minCount" not in workers
    for pod_set in (launcher, workers):
        assert set(pod_set["template"]["metadata"]) <= {"labels", "annotations"}
        assert "hostname" not in pod_set["template"]["spec"]
        assert pod_set["template"]["spec"]["containers"]


def test_min_counts_below_the_count_allow_a_partial_admission() -> None:
    job = make_job(worker={"replicas": 4})
    sets = pod_sets(KIND, job, {"worker": 2, "launcher": 1})
    assert [s.get("minCount") for s in sets] == [None, 2]


def test_the_workload_is_owned_queued_and_finalized_as_kueue_makes_it() -> None:
    job = make_job()
    sets = pod_sets(KIND, job)
    ref = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
    workload = new_workload(job, GROUP, "team-a-queue", sets, (ref, 1000))
    meta = workload["metadata"]
    assert meta["name"] == workload_name("MPIJob", GROUP, "walk", job.uid)
    assert meta["namespace"] == "team-a"
    assert meta["finalizers"] == [RESOURCE_IN_USE_FINALIZER]
    assert meta["labels"] == {JOB_UID_LABEL: job.uid}
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("MPIJob", "walk", True)
    assert workload["spec"]["queueName"] == "team-a-queue"
    assert workload["spec"]["priority"] == 1000
    assert workload["spec"]["priorityClassRef"] == ref
    assert queue_name(job.obj) == "team-a-queue"


def test_only_counts_and_resources_make_pod_sets_differ() -> None:
    job = make_job()
    sets = pod_sets(KIND, job)
    workload = new_workload(job, GROUP, "q", sets, (None, 0))
    defaulted = copy.deepcopy(workload)
    for pod_set in defaulted["spec"]["podSets"]:  # what an API server's defaults add
        pod_set["template"]["spec"]["restartPolicy"] = "Always"
        pod_set["template"]["spec"]["containers"][0]["terminationMessagePath"] = "/dev/x"
    assert same_pod_sets(defaulted, sets)
    assert not same_pod_sets(workload, pod_sets(KIND, make_job(worker={"replicas": 7})))
    bigger = copy.deepcopy(sets)
    bigger[1]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "64"}}
    assert not same_pod_sets(workload, bigger)


# Admission ------------------------------------------------------------------------------


def admitted(sets: list[Object], flavors: dict[str, str], count: int | None = None) -> Object:
    """A Workload of `sets` whose every pod set Kueue assigned `flavors` (resource: flavour)."""
    assignments = [{"name": s["name"], "flavors": flavors} for s in sets]
    if count is not None:
        assignments[-1]["count"] = count
    return {
        "spec": {"podSets": sets},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": assignments}},
    }


FLAVORS: dict[str, Object] = {
    "spot": {"spec": {"nodeLabels": {"pool": "spot"}, "tolerations": [{"key": "spot"}]}},
    "gpu": {"spec": {"nodeLabels": {"gpu": "a100"}}},
}


def test_each_pod_gets_its_flavours_node_labels_tolerations_and_pod_set() -> None:
    job = make_job(worker={"replicas": 2})
    sets = pod_sets(KIND, job)
    infos = admitted_pod_sets(admitted(sets, {"cpu": "spot", "nvidia.com/gpu": "gpu"}), FLAVORS)
    selector, labels = {"pool": "spot", "gpu": "a100"}, {POD_SET_LABEL: "worker"}
    assert infos["worker"] == PodSetInfo(2, selector, [{"key": "spot"}], labels=labels)
    pods = {p["metadata"]["name"]: p for p in KIND.render(job, observed_of()) if p["kind"] == "Pod"}
    worker = pods["walk-worker-0"]
    admit_pod(worker, infos)
    assert worker["spec"]["nodeSelector"] == {"pool": "spot", "gpu": "a100"}
    assert worker["spec"]["tolerations"] == [{"key": "spot"}]
    assert worker["metadata"]["labels"][POD_SET_LABEL] == "worker"
    admit_pod(worker, infos)  # once more: nothing doubles
    assert worker["spec"]["tolerations"] == [{"key": "spot"}]


def test_a_partial_admission_counts_and_a_contradicting_flavour_refuses() -> None:
    job = make_job(worker={"replicas": 4})
    sets = pod_sets(KIND, job, {"worker": 2})
    assert admitted_pod_sets(admitted(sets, {"cpu": "spot"}, count=3), FLAVORS)["worker"].count == 3
    infos = admitted_pod_sets(admitted(sets, {"cpu": "spot"}), FLAVORS)
    pod = {
        "metadata": {"labels": {REPLICA_TYPE_LABEL: "worker"}},
        "spec": {"nodeSelector": {"pool": "on-demand"}},
    }
    with pytest.raises(
        AdmissionConflict, match="pool=spot contradicts the pods' nodeSelector pool=on-demand"
    ):
        admit_pod(pod, infos)


def test_admission_checks_pod_set_updates_join_the_flavours_unless_they_contradict() -> None:
    job = make_job(worker={"replicas": 2})
    workload = admitted(pod_sets(KIND, job), {"cpu": "spot"})
    update = {
        "name": "worker",
        "labels": {"team": "a"},
        "annotations": {"provisioned": "yes"},
        "nodeSelector": {"zone": "z1"},
        "tolerations": [{"key": "spot"}, {"key": "reserved"}],
    }
    check = {"name": "prov", "state": "Ready", "podSetUpdates": [update]}
    workload["status"]["admissionChecks"] = [check]
    infos = admitted_pod_sets(workload, FLAVORS)
    pods = {p["metadata"]["name"]: p for p in KIND.render(job, observed_of()) if p["kind"] == "Pod"}
    worker = pods["walk-worker-0"]
    launcher: Object = {"metadata": {"labels": {REPLICA_TYPE_LABEL: "launcher"}}, "spec": {}}
    admit_pod(worker, infos)
    admit_pod(launcher, infos)
    assert worker["spec"]["nodeSelector"] == {"pool": "spot", "zone": "z1"}
    assert worker["spec"]["tolerations"] == [{"key": "spot"}, {"key": "reserved"}]
    assert worker["metadata"]["labels"]["team"] == "a"
    assert worker["metadata"]["annotations"]["provisioned"] == "yes"
    assert launcher["spec"]["nodeSelector"] == {"pool": "spot"}, "another pod set's update"

    update["nodeSelector"] = {"pool": "reserved"}  # against the flavour's node label
    with pytest.raises(AdmissionConflict, match="admission check prov's nodeSelector pool="):
        admit_pod(pods["walk-worker-1"], admitted_pod_sets(workload, FLAVORS))
    update["nodeSelector"] = {}
    update["labels"] = {REPLICA_TYPE_LABEL: "other"}  # against the pods' own label
    with pytest.raises(AdmissionConflict, match="contradicts the pods' labels"):
        admit_pod(pods["walk-worker-1"], admitted_pod_sets(workload, FLAVORS))


def test_a_queued_jobs_pod_sets_are_rendered_again_only_when_it_changed() -> None:
    queueing = Queueing(
        client=cast(Any, None), kind=KIND, workloads=cast(Any, None), recorder=cast(Any, None)
    )

    def stored(generation: int, replicas: int, **labels: str) -> Job[MPIJobSpec]:
        job = make_job(worker={"replicas": replicas})
        job.obj["metadata"]["generation"] = generation
        job.obj["metadata"]["labels"].update(labels)
        return job

    first = queueing._sets(stored(1, 3))
    assert queueing._sets(stored(1, 3)) is first  # a status write, say: nothing rendered
    resized = queueing._sets(stored(2, 5))
    assert [s["count"] for s in resized] == [1, 5]
    relabelled = queueing._sets(stored(2, 5, team="b"))
    assert relabelled is not resized and relabelled == resized
