"""Waiting on a running controller's own work: a request reconciled, an object settled.

A test that asserts what a reconcile did not do (write nothing, leave a status alone) must
first know that the reconcile ran; these wait for that, rather than for a fixed time.
"""

from __future__ import annotations

from jobcore._runtime.client import Client
from jobcore._runtime.controller import Controller
from jobcore._runtime.handler import Request
from jobcore._runtime.metrics import REGISTRY
from jobcore._runtime.resources import Resource
from jobcore.testing._shared.eventually import eventually


def _reconciles(controller: Controller) -> float:
    """Reconciles of any result finished so far by controllers of `controller`'s name."""
    total = 0.0
    for metric in REGISTRY.collect():
        for sample in metric.samples:
            if (
                sample.name == "controller_runtime_reconcile_total"
                and sample.labels["controller"] == controller.name
            ):
                total += sample.value
    return total


def _idle(controller: Controller, request: Request) -> bool:
    return not controller.queue.waiting(request) and controller.queue.processing == 0


async def resync(controller: Controller, request: Request, *, timeout: float = 10) -> None:
    """Enqueue `request`, as a periodic resync would, and wait until it has been reconciled.

    Returns once a reconcile has finished since the call and the controller has nothing
    waiting or in progress, so that reconcile saw the state at the call. Writes it made in the
    background (Events) may still be on their way.
    """
    before = _reconciles(controller)
    controller.queue.add(request)
    await eventually(
        lambda: _reconciles(controller) > before and _idle(controller, request), timeout=timeout
    )


async def wait_until_settled(
    client: Client,
    controller: Controller,
    resource: Resource,
    request: Request,
    *,
    timeout: float = 10,
) -> None:
    """Wait until `controller` has nothing to do for `request` and its cache of `resource`
    holds the object as stored, its own writes included.

    Another writer's change made after this is one the controller has to notice, not one its
    own write in flight could happen to undo. A write it holds back for later (a coalesced
    progress update) can still come: wait first for the status that write would carry. The
    controller must watch `resource`.
    """
    (informer,) = [i for i in controller.informers if i.resource == resource]

    async def settled() -> bool:
        if not _idle(controller, request):
            return False
        stored = await client.get(resource, request.name, request.namespace)
        cached = informer.get(request.name, request.namespace)
        version = stored["metadata"]["resourceVersion"]
        return cached is not None and cached["metadata"]["resourceVersion"] == version

    await eventually(settled, timeout=timeout, interval=0.1)
