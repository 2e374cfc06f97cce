"""Controllers against a real API server: owner-mapped enqueue and queue semantics under load."""

from __future__ import annotations

import asyncio
import collections
import itertools

import pytest

from jobcore import CONFIGMAPS
from jobcore import SECRETS
from jobcore import Client
from jobcore import Controller
from jobcore import Informer
from jobcore import LabelSelectorPredicate
from jobcore import Object
from jobcore import Request
from jobcore import Result
from jobcore import owner_reference
from jobcore import requests_for_owner
from jobcore.testing import background
from jobcore.testing import eventually

pytestmark = pytest.mark.integration


class RecordingReconciler:
    """Reconciles by reading the cache; records what it saw and checks keys never overlap."""

    def __init__(self, informer: Informer, delay: float = 0.0) -> None:
        self.informer = informer
        self.delay = delay
        self.calls: collections.Counter[Request] = collections.Counter()
        self.seen: dict[Request, str] = {}
        self.in_flight: collections.Counter[Request] = collections.Counter()
        self.overlaps = 0

    async def reconcile(self, request: Request) -> Result:
        self.in_flight[request] += 1
        if self.in_flight[request] > 1:
            self.overlaps += 1
        try:
            self.calls[request] += 1
            obj = self.informer.get(request.name, request.namespace)
            await asyncio.sleep(self.delay)
            if obj is not None:
                self.seen[request] = obj["data"]["value"]
            return Result()
        finally:
            self.in_flight[request] -= 1


def configmap(namespace: str, name: str, value: str = "0", **labels: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"value": value},
    }


async def test_events_of_owned_objects_reconcile_their_owner(
    client: Client, namespace: str
) -> None:
    owner = await client.create(CONFIGMAPS, configmap(namespace, "owner"))
    configmaps = Informer(client, CONFIGMAPS, namespace=namespace)
    secrets = Informer(client, SECRETS, namespace=namespace)
    reconciler = RecordingReconciler(configmaps)
    controller = Controller("owner-mapping", reconciler)
    controller.watch(configmaps)
    controller.watch(secrets, mapper=requests_for_owner(CONFIGMAPS))
    key = Request(namespace, "owner")
    async with (
        background(configmaps.run()),
        background(secrets.run()),
        background(controller.run()),
    ):
        await eventually(lambda: reconciler.calls[key] == 1)
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "owned",
                "namespace": namespace,
                "ownerReferences": [owner_reference(owner)],
            },
        }
        await client.create(SECRETS, secret)
        await eventually(lambda: reconciler.calls[key] == 2)
        await client.create(
            SECRETS,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "orphan", "namespace": namespace},
            },
        )
        await client.delete(SECRETS, "owned", namespace)
        await eventually(lambda: reconciler.calls[key] == 3)
        await asyncio.sleep(0.3)
        assert set(reconciler.calls) == {key}, "an unowned secret must not enqueue anything"


async def test_concurrent_events_never_overlap_one_key_and_end_on_the_last_state(
    client: Client, namespace: str
) -> None:
    names = [f"cm-{i}" for i in range(5)]
    for name in names:
        await client.create(CONFIGMAPS, configmap(namespace, name))
    informer = Informer(client, CONFIGMAPS, namespace=namespace)
    reconciler = RecordingReconciler(informer, delay=0.02)
    controller = Controller("concurrency", reconciler, max_concurrent_reconciles=4)
    controller.watch(informer)
    updates_per_object = 20
    async with background(informer.run()), background(controller.run()):
        await eventually(lambda: len(reconciler.calls) == len(names))

        async def churn(name: str) -> None:
            for value in range(1, updates_per_object + 1):
                await client.patch(CONFIGMAPS, name, {"data": {"value": str(value)}}, namespace)

        await asyncio.gather(*(churn(name) for name in names))
        final = str(updates_per_object)
        await eventually(
            lambda: all(reconciler.seen.get(Request(namespace, n)) == final for n in names)
        )
    assert reconciler.overlaps == 0
    total_calls = sum(reconciler.calls.values())
    # Events that arrive while a key waits or runs collapse: far fewer runs than events.
    assert total_calls < len(names) * (updates_per_object + 1)


async def test_label_selector_predicate_filters_events(client: Client, namespace: str) -> None:
    informer = Informer(client, CONFIGMAPS, namespace=namespace)
    reconciler = RecordingReconciler(informer)
    controller = Controller("predicate", reconciler)
    controller.watch(informer, predicates=[LabelSelectorPredicate("watched=yes")])
    async with background(informer.run()), background(controller.run()):
        await client.create(CONFIGMAPS, configmap(namespace, "ignored", watched="no"))
        await client.create(CONFIGMAPS, configmap(namespace, "wanted", watched="yes"))
        await eventually(lambda: reconciler.calls[Request(namespace, "wanted")] == 1)
        await asyncio.sleep(0.3)
        assert Request(namespace, "ignored") not in reconciler.calls


async def test_failing_reconcile_is_retried_with_backoff_until_it_succeeds(
    client: Client, namespace: str
) -> None:
    attempts: list[float] = []

    class Flaky:
        async def reconcile(self, request: Request) -> Result:
            attempts.append(asyncio.get_running_loop().time())
            if len(attempts) < 7:
                raise RuntimeError("not yet")
            return Result()

    informer = Informer(client, CONFIGMAPS, namespace=namespace)
    controller = Controller("flaky", Flaky())
    controller.watch(informer)
    async with background(informer.run()), background(controller.run()):
        await client.create(CONFIGMAPS, configmap(namespace, "flaky"))
        await eventually(lambda: len(attempts) == 7)
        await asyncio.sleep(0.2)
    assert len(attempts) == 7, "a success must end the retries"
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    # Per-key exponential backoff: 5 ms, 10 ms, 20 ms, ... before each retry.
    for retry, gap in enumerate(gaps):
        assert gap >= 0.005 * 2**retry, f"retry {retry} came too soon: {gaps}"
    assert gaps[-1] < 1.0, f"backoff should still be short: {gaps}"
