"""Gang schedulers on plain objects: each one's PodGroup and pod fields, and who gets which."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest

from jobcore import Object
from jobcore import Resource
from jobcore._jobs.scheduling import scheduler_for
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import GangScheduler
from jobcore.jobs import Job
from jobcore.jobs import JobSpec
from jobcore.jobs import PodSpec
from jobcore.jobs import SchedulerPlugins
from jobcore.jobs import T9kScheduler
from jobcore.jobs import Volcano
from jobcore.jobs import summed_requests
from jobcore.testing import ModelKind
from jobcore.testing import job_manifest
from jobcore.testing import job_of

T9K = {"scheduler": {"t9kScheduler": {"queue": "team-a", "priority": 50}}}


KIND = ModelKind(Resource("example.com", "v1", "TestJob", "testjobs"), JobSpec)


def make_job(
    spec: Mapping[str, Any] | None = None, annotations: Mapping[str, str] | None = None
) -> Job[JobSpec]:
    obj = job_manifest(KIND, spec or {}, name="j", namespace="ns")
    obj["metadata"]["annotations"] = dict(annotations or {})
    return job_of(KIND, obj)


def pod(replica_type: str = "worker", **spec: Any) -> Object:
    return {
        "metadata": {"name": f"j-{replica_type}-0", "labels": {REPLICA_TYPE_LABEL: replica_type}},
        "spec": {"containers": [{"name": "main"}], **spec},
    }


def decorated(scheduler: GangScheduler, job: Job[JobSpec]) -> Object:
    obj = pod("launcher")
    obj["metadata"]["labels"]["app"] = "x"
    scheduler.decorate(job, obj)
    assert obj["metadata"]["labels"]["app"] == "x", "the pod's own labels stay"
    return obj


def test_t9k_pod_group_has_the_jobs_queue_and_priority() -> None:
    job = make_job(T9K)
    assert T9kScheduler().pod_group(job, 3, [pod()]) == {
        "apiVersion": "scheduler.tensorstack.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "j"},
        "spec": {"minMember": 3, "queue": "team-a", "priority": 50},
    }


def test_t9k_pods_name_group_queue_and_role() -> None:
    obj = decorated(T9kScheduler(), make_job(T9K))
    assert obj["spec"]["schedulerName"] == "t9k-scheduler"
    labels = obj["metadata"]["labels"]
    assert labels["scheduler.tensorstack.dev/group-name"] == "j"
    assert labels["scheduler.tensorstack.dev/queue"] == "team-a"
    assert labels["scheduler.tensorstack.dev/role"] == "launcher"


def test_volcano_pod_group_queue_comes_from_the_job_annotation_else_the_default() -> None:
    pods = [pod("launcher"), pod(priorityClassName="high")]
    group = Volcano(queue="default-q").pod_group(make_job(), 4, pods)
    assert (group["apiVersion"], group["kind"]) == ("scheduling.volcano.sh/v1beta1", "PodGroup")
    assert group["metadata"] == {"name": "j"}
    assert group["spec"] == {"minMember": 4, "queue": "default-q", "priorityClassName": "high"}
    annotated = make_job(annotations={"scheduling.volcano.sh/queue-name": "team-q"})
    assert Volcano(queue="default-q").pod_group(annotated, 4, pods)["spec"]["queue"] == "team-q"
    assert Volcano().pod_group(make_job(), 2, [pod()])["spec"] == {"minMember": 2}


def test_volcano_pods_name_their_group_in_an_annotation() -> None:
    obj = decorated(Volcano(), make_job())
    assert obj["spec"]["schedulerName"] == "volcano"
    assert obj["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "j"}
    assert "scheduling.k8s.io/group-name" not in obj["metadata"]["labels"]
    assert decorated(Volcano(scheduler_name="vc"), make_job())["spec"]["schedulerName"] == "vc"


def test_scheduler_plugins_pod_group_bounds_a_partial_gangs_wait() -> None:
    group = SchedulerPlugins(schedule_timeout_seconds=60).pod_group(make_job(), 5, [pod()])
    assert group == {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "j"},
        "spec": {"minMember": 5, "scheduleTimeoutSeconds": 60},
    }
    assert SchedulerPlugins().pod_group(make_job(), 5, [pod()])["spec"] == {"minMember": 5}


def test_scheduler_plugins_pods_name_their_group_in_a_label() -> None:
    obj = decorated(SchedulerPlugins(), make_job())
    assert obj["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
    assert obj["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "j"
    assert "annotations" not in obj["metadata"]


def test_a_jobs_own_t9k_scheduler_wins_over_the_controllers_default() -> None:
    volcano = Volcano()
    assert isinstance(scheduler_for(make_job(T9K), volcano), T9kScheduler)
    assert isinstance(scheduler_for(make_job(T9K), None), T9kScheduler)
    assert scheduler_for(make_job(), volcano) is volcano
    assert scheduler_for(make_job({"scheduler": {}}), volcano) is volcano
    assert scheduler_for(make_job(), None) is None


def test_t9k_as_the_controllers_default_uses_its_own_queue_for_jobs_that_name_none() -> None:
    scheduler = T9kScheduler(queue="batch", priority=10)
    job = make_job()
    assert scheduler.pod_group(job, 2, [pod()])["spec"] == {
        "minMember": 2,
        "queue": "batch",
        "priority": 10,
    }
    assert decorated(scheduler, job)["metadata"]["labels"]["scheduler.tensorstack.dev/queue"] == (
        "batch"
    )


def test_summed_requests_count_requests_else_limits_per_container_times_pods() -> None:
    first = PodSpec.model_validate(
        {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"name": "b", "resources": {"limits": {"cpu": 1, "nvidia.com/gpu": "1"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "8"}}}],
        }
    )
    second = PodSpec.model_validate(
        {
            "containers": [
                {
                    "name": "c",
                    "resources": {
                        "requests": {"memory": "512Mi", "cpu": "not a quantity"},
                        "limits": {"memory": "4Gi", "cpu": "250m"},
                    },
                }
            ]
        }
    )
    assert summed_requests([(first, 1), (second, 3)]) == {
        "cpu": "1500m",  # 500m + 1 (a limit: b requests none); c's unreadable request is left out
        "memory": "2560Mi",  # 1Gi + 3 x 512Mi: requests win over limits
        "nvidia.com/gpu": "1",
    }
    assert summed_requests([(second, 0)]) == {"memory": "0"}
    assert summed_requests([]) == {}


@pytest.mark.parametrize("hostile", ["1e5000", "1e10000000", "9" * 5000, "1" + "0" * 41])
def test_a_quantity_far_beyond_what_kubernetes_stores_is_left_out_at_once(hostile: str) -> None:
    spec = PodSpec.model_validate(
        {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": hostile, "memory": "1Gi"}}}
            ]
        }
    )
    started = time.perf_counter()
    assert summed_requests([(spec, 1000)]) == {"memory": "1000Gi"}
    assert time.perf_counter() - started < 0.5
