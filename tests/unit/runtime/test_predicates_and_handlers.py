"""Unit tests for predicates, request mappers and the EnqueueRequests event handler."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jobcore._runtime.handler import EnqueueRequests
from jobcore._runtime.handler import Request
from jobcore._runtime.handler import request_for_object
from jobcore._runtime.handler import requests_for_owner
from jobcore._runtime.predicate import FuncPredicate
from jobcore._runtime.predicate import GenerationChanged
from jobcore._runtime.predicate import LabelSelectorPredicate
from jobcore._runtime.resources import NODES
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import ObjectKey
from jobcore._runtime.resources import Resource
from jobcore._runtime.workqueue import WorkQueue
from tests.unit.runtime.test_queue import drain

JOBS = Resource("batch", "v1", "Job", "jobs")
TRAINING_JOBS = Resource("training.example.com", "v1alpha1", "TrainingJob", "trainingjobs")


def make(
    name: str,
    namespace: str | None = "default",
    *,
    generation: int = 1,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
) -> Object:
    meta: dict[str, Any] = {"name": name, "generation": generation, "uid": f"uid-{name}"}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels is not None:
        meta["labels"] = labels
    if owners is not None:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def ref(
    name: str, *, api_version: str = "batch/v1", kind: str = "Job", controller: bool | None = True
) -> dict[str, Any]:
    reference: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
    }
    if controller is not None:
        reference["controller"] = controller
    return reference


# --- predicates ---------------------------------------------------------------------------------


def test_generation_changed_passes_creates_deletes_and_spec_changes_only() -> None:
    predicate = GenerationChanged()
    old, same, bumped = make("a", generation=1), make("a", generation=1), make("a", generation=2)
    same["status"] = {"phase": "Running"}
    assert predicate.create(old)
    assert predicate.delete(old)
    assert not predicate.update(old, same), "a status-only change keeps the generation"
    assert predicate.update(old, bumped)


def test_label_selector_predicate_tests_labels_of_the_new_object() -> None:
    predicate = LabelSelectorPredicate("app=web,tier!=db")
    web, db, bare = (
        make("a", labels={"app": "web"}),
        make("b", labels={"app": "web", "tier": "db"}),
        make("c"),
    )
    assert predicate.create(web)
    assert not predicate.create(db)
    assert not predicate.create(bare), "an object without labels has no app=web"
    assert predicate.delete(web)
    assert not predicate.delete(db)
    assert predicate.update(bare, web)
    assert not predicate.update(web, db)


def test_label_selector_predicate_rejects_a_malformed_selector() -> None:
    with pytest.raises(ValueError):
        LabelSelectorPredicate("app in (web")


def test_func_predicate_uses_given_functions_and_passes_the_rest() -> None:
    seen: list[str] = []

    def create(obj: Object) -> bool:
        name: str = obj["metadata"]["name"]
        seen.append(f"create {name}")
        return name == "yes"

    def update(old: Object, new: Object) -> bool:
        seen.append(f"update {old['metadata']['name']}->{new['metadata']['name']}")
        return False

    predicate = FuncPredicate(create_func=create, update_func=update)
    assert predicate.create(make("yes"))
    assert not predicate.create(make("no"))
    assert not predicate.update(make("x"), make("y"))
    assert predicate.delete(make("no")), "delete has no function, so it passes"
    assert seen == ["create yes", "create no", "update x->y"]

    default = FuncPredicate()
    assert default.create(make("a"))
    assert default.update(make("a"), make("b"))
    assert default.delete(make("a"))


# --- mappers ------------------------------------------------------------------------------------


def test_request_for_object_is_the_object_key() -> None:
    assert list(request_for_object(make("a", "ns1"))) == [ObjectKey("ns1", "a")]
    assert list(request_for_object(make("node-1", None))) == [ObjectKey("", "node-1")]


def test_requests_for_owner_maps_to_the_controller_owner_of_that_kind() -> None:
    mapper = requests_for_owner(JOBS)
    pod = make("p", "ns1", owners=[ref("job-1")])
    assert list(mapper(pod)) == [ObjectKey("ns1", "job-1")]


def test_requests_for_owner_ignores_non_controller_references() -> None:
    mapper = requests_for_owner(JOBS)
    assert list(mapper(make("p", owners=[ref("job-1", controller=False)]))) == []
    assert list(mapper(make("p", owners=[ref("job-1", controller=None)]))) == []
    assert list(mapper(make("p"))) == []
    assert list(mapper(make("p", owners=[]))) == []
    mixed = make("p", owners=[ref("not-me", controller=False), ref("job-2")])
    assert list(mapper(mixed)) == [ObjectKey("default", "job-2")]


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("batch/v1", "CronJob"),  # same group, other kind
        ("other.example.com/v1", "Job"),  # same kind, other group
        ("v1", "Job"),  # same kind, core group
        ("training.example.com/v1alpha1", "TrainingJob"),
    ],
)
def test_requests_for_owner_requires_kind_and_group_to_match(api_version: str, kind: str) -> None:
    pod = make("p", owners=[ref("x", api_version=api_version, kind=kind)])
    assert list(requests_for_owner(JOBS)(pod)) == []


def test_requests_for_owner_ignores_the_version() -> None:
    pod = make("p", owners=[ref("job-1", api_version="batch/v2")])
    assert list(requests_for_owner(JOBS)(pod)) == [ObjectKey("default", "job-1")]


def test_requests_for_owner_with_a_core_group_owner() -> None:
    mapper = requests_for_owner(PODS)
    owned = make("p", owners=[ref("owner-pod", api_version="v1", kind="Pod")])
    assert list(mapper(owned)) == [ObjectKey("default", "owner-pod")]
    grouped = make("p", owners=[ref("owner-pod", api_version="example.com/v1", kind="Pod")])
    assert list(mapper(grouped)) == []


def test_requests_for_owner_with_a_cluster_scoped_owner_has_no_namespace() -> None:
    # A namespaced object may have a cluster-scoped owner; the owner's key then has no
    # namespace (controller-runtime leaves Request.Namespace empty for root-scoped owners),
    # otherwise the reconciler looks the owner up under the dependent's namespace.
    clusters = Resource("example.com", "v1", "Cluster", "clusters", namespaced=False)
    owned = make("p", "ns1", owners=[ref("c1", api_version="example.com/v1", kind="Cluster")])
    assert list(requests_for_owner(clusters)(owned)) == [ObjectKey("", "c1")]
    mirror_pod = make(
        "static-web-node-1", "kube-system", owners=[ref("node-1", api_version="v1", kind="Node")]
    )
    assert list(requests_for_owner(NODES)(mirror_pod)) == [ObjectKey("", "node-1")]


def test_requests_for_owner_with_a_custom_resource_owner() -> None:
    owned = make(
        "p",
        "ns2",
        owners=[ref("tj", api_version="training.example.com/v1alpha1", kind="TrainingJob")],
    )
    assert list(requests_for_owner(TRAINING_JOBS)(owned)) == [ObjectKey("ns2", "tj")]
    assert list(requests_for_owner(JOBS)(owned)) == []


# --- EnqueueRequests ----------------------------------------------------------------------------


def test_add_update_delete_enqueue_the_mapped_requests() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, requests_for_owner(JOBS))
    pod = make("p", owners=[ref("job-1")])

    handler.on_add(pod)
    assert drain(queue) == [ObjectKey("default", "job-1")]
    handler.on_update(pod, make("p", generation=2, owners=[ref("job-1")]))
    assert drain(queue) == [ObjectKey("default", "job-1")]
    handler.on_delete(pod)
    assert drain(queue) == [ObjectKey("default", "job-1")]


def test_events_that_map_to_nothing_enqueue_nothing() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, requests_for_owner(JOBS))
    orphan = make("p")
    handler.on_add(orphan)
    handler.on_update(orphan, make("p", generation=2))
    handler.on_delete(orphan)
    assert len(queue) == 0


def test_primary_object_events_enqueue_the_object_itself() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, request_for_object)
    handler.on_add(make("a", "ns1"))
    handler.on_add(make("b", "ns2"))
    assert drain(queue) == [ObjectKey("ns1", "a"), ObjectKey("ns2", "b")]


def test_predicates_filter_events() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, request_for_object, [GenerationChanged()])
    v1, v1_status = make("a", generation=1), make("a", generation=1)
    v1_status["status"] = {"ready": True}
    handler.on_update(v1, v1_status)
    assert len(queue) == 0
    handler.on_update(v1, make("a", generation=2))
    assert drain(queue) == [ObjectKey("default", "a")]


def test_every_predicate_must_pass() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(
        queue,
        request_for_object,
        [LabelSelectorPredicate("app=web"), FuncPredicate(delete_func=lambda _: False)],
    )
    handler.on_add(make("no-label"))
    handler.on_add(make("web", labels={"app": "web"}))
    assert drain(queue) == [ObjectKey("default", "web")]
    handler.on_delete(make("web", labels={"app": "web"}))
    assert len(queue) == 0, "the second predicate vetoes deletes"
    handler.on_update(make("web"), make("web", labels={"app": "web"}))
    assert drain(queue) == [ObjectKey("default", "web")]


def test_update_that_changes_the_owner_enqueues_both_owners() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, requests_for_owner(JOBS))
    handler.on_update(make("p", owners=[ref("job-1")]), make("p", owners=[ref("job-2")]))
    assert sorted(drain(queue)) == [ObjectKey("default", "job-1"), ObjectKey("default", "job-2")]


def test_update_that_releases_or_adopts_enqueues_the_one_owner() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, requests_for_owner(JOBS))
    handler.on_update(make("p", owners=[ref("job-1")]), make("p"))
    assert drain(queue) == [ObjectKey("default", "job-1")]
    handler.on_update(make("p"), make("p", owners=[ref("job-2")]))
    assert drain(queue) == [ObjectKey("default", "job-2")]


def test_update_with_the_same_owner_enqueues_it_once() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, requests_for_owner(JOBS))
    handler.on_update(
        make("p", owners=[ref("job-1")]), make("p", generation=2, owners=[ref("job-1")])
    )
    assert queue.get_nowait() == ObjectKey("default", "job-1")
    assert len(queue) == 0


def test_duplicate_events_are_deduplicated_by_the_queue() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, requests_for_owner(JOBS))
    for index in range(5):
        pod = make(f"p{index}", owners=[ref("job-1")])
        handler.on_add(pod)
        handler.on_update(pod, make(f"p{index}", generation=2, owners=[ref("job-1")]))
    handler.on_add(make("q", owners=[ref("job-2")]))
    assert drain(queue) == [ObjectKey("default", "job-1"), ObjectKey("default", "job-2")]


def test_event_while_the_request_is_processing_is_handed_out_again_once() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, request_for_object)
    handler.on_add(make("a"))
    request = queue.get_nowait()
    handler.on_update(make("a"), make("a", generation=2))
    handler.on_update(make("a", generation=2), make("a", generation=3))
    assert len(queue) == 0, "not handed to a second worker while processing"
    queue.done(request)
    assert drain(queue) == [request]


async def test_with_a_delay_a_burst_of_events_is_one_request_that_much_later() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, requests_for_owner(JOBS), delay=0.05)
    pods = [make(f"p{i}", owners=[ref("job-1")]) for i in range(8)]
    for pod in pods:
        handler.on_add(pod)
    assert len(queue) == 0
    await asyncio.sleep(0.1)
    assert drain(queue) == [ObjectKey("default", "job-1")]


async def test_with_a_delay_an_event_for_a_waiting_request_adds_nothing() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    handler = EnqueueRequests(queue, requests_for_owner(JOBS), delay=0.05)
    queue.add(ObjectKey("default", "job-1"))  # waiting: its reconcile will see the event
    handler.on_add(make("p", owners=[ref("job-1")]))
    assert drain(queue) == [ObjectKey("default", "job-1")]
    await asyncio.sleep(0.1)
    assert len(queue) == 0
    item = ObjectKey("default", "job-1")
    queue.add(item)
    assert queue.get_nowait() == item  # being reconciled: this event needs another pass
    handler.on_add(make("p", owners=[ref("job-1")]))
    queue.done(item)
    await asyncio.sleep(0.1)
    assert drain(queue) == [item]


async def test_with_a_delay_deletions_and_urgent_objects_are_enqueued_at_once() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    failed = make("p1", owners=[ref("job-1")])
    failed["status"] = {"phase": "Failed"}
    handler = EnqueueRequests(
        queue,
        requests_for_owner(JOBS),
        delay=60.0,
        urgent=lambda obj: (obj.get("status") or {}).get("phase") == "Failed",
    )
    handler.on_update(make("p1", owners=[ref("job-1")]), failed)
    assert drain(queue) == [ObjectKey("default", "job-1")]
    handler.on_delete(make("p2", owners=[ref("job-2")]))
    assert drain(queue) == [ObjectKey("default", "job-2")]
    handler.on_add(make("p3", owners=[ref("job-3")]))
    assert len(queue) == 0
