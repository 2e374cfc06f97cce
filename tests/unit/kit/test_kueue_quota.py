"""The Kueue stand-in's flavour arithmetic on plain objects: requests as Kueue counts them,
the first flavour that fits, the flavours a pod set cannot use, and Kueue's messages."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from jobcore import Object
from jobcore.testing._kueue import quota


def pod_set(name: str = "main", count: int = 1, **spec: Any) -> Object:
    spec.setdefault("containers", [{"name": "c", "resources": {"requests": {"cpu": "1"}}}])
    return {"name": name, "count": count, "template": {"spec": spec}}


def cluster_queue(*flavors: tuple[str, dict[str, str]]) -> Object:
    return {
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": name,
                            "resources": [
                                {"name": r, "nominalQuota": q} for r, q in quotas.items()
                            ],
                        }
                        for name, quotas in flavors
                    ],
                }
            ]
        }
    }


def flavor(name: str, **spec: Any) -> Object:
    return {"metadata": {"name": name}, "spec": spec}


def test_requests_count_limits_init_containers_and_overhead() -> None:
    template = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}},
                },
                {"name": "b", "resources": {"requests": {"cpu": "1"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
            "overhead": {"cpu": "100m"},
        }
    }
    assert quota.pod_requests(template) == {"cpu": Fraction(21, 10), "memory": Fraction(2**30)}


def test_the_first_flavour_that_fits_and_the_usage_it_records() -> None:
    groups = quota.resource_groups(
        cluster_queue(("small", {"cpu": "1"}), ("large", {"cpu": "8", "memory": "16Gi"})),
        {"small": flavor("small"), "large": flavor("large")},
    )
    memory = [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]
    assignment = quota.assign(
        [pod_set("workers", 3, containers=memory)], [3], groups, {}, can_preempt=False
    )
    assert assignment.fits
    assert [p.to_api() for p in assignment.pod_sets] == [
        {
            "name": "workers",
            "flavors": {"cpu": "large", "memory": "large"},
            "resourceUsage": {"cpu": "3", "memory": "6Gi"},
            "count": 3,
        }
    ]


def test_a_flavour_is_refused_for_its_labels_and_untolerated_taints() -> None:
    flavors = {
        "zone-a": flavor("zone-a", nodeLabels={"zone": "a"}),
        "tainted": flavor(
            "tainted", nodeTaints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]
        ),
        "zone-b": flavor("zone-b", nodeLabels={"zone": "b"}),
    }
    groups = quota.resource_groups(
        cluster_queue(*((name, {"cpu": "4"}) for name in flavors)), flavors
    )
    assignment = quota.assign(
        [pod_set(nodeSelector={"zone": "b"})], [1], groups, {}, can_preempt=False
    )
    assert assignment.pod_sets[0].flavors == {"cpu": "zone-b"}
    tolerating = pod_set(
        tolerations=[{"key": "gpu", "operator": "Exists"}], nodeSelector={"zone": "c"}
    )
    assignment = quota.assign([tolerating], [1], groups, {}, can_preempt=False)
    assert assignment.pod_sets[0].flavors == {"cpu": "tainted"}


def test_kueues_messages_when_nothing_fits() -> None:
    groups = quota.resource_groups(
        cluster_queue(("default", {"cpu": "2"})), {"default": flavor("default")}
    )
    used = {("default", "cpu"): Fraction(1)}
    assignment = quota.assign([pod_set(count=2)], [2], groups, used, can_preempt=True)
    assert (assignment.fits, assignment.preempt) == (False, True)
    assert assignment.message() == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor"
        " default, 1 more needed"
    )
    gpu = [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
    assignment = quota.assign(
        [pod_set(count=3), pod_set("gpu", containers=gpu)], [3, 1], groups, {}, can_preempt=False
    )
    assert assignment.message() == (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default,"
        " previously considered podsets requests (0) + current podset request (3) > maximum"
        " capacity (2); couldn't assign flavors to pod set gpu: resource nvidia.com/gpu"
        " unavailable in ClusterQueue"
    )
