"""Helpers for testing job kinds against the real API server: CRDs, status, pods, events."""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any

from jobcore._jobs.controller import add_job_controller
from jobcore._jobs.crd import crd_for
from jobcore._jobs.kind import JobKind
from jobcore._jobs.models import JobSpec
from jobcore._runtime.client import Client
from jobcore._runtime.controller import Controller
from jobcore._runtime.errors import AlreadyExistsError
from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import NotFoundError
from jobcore._runtime.manager import Manager
from jobcore._runtime.resources import CUSTOM_RESOURCE_DEFINITIONS
from jobcore._runtime.resources import EVENTS
from jobcore._runtime.resources import NAMESPACES
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource
from jobcore.testing._shared.background import background
from jobcore.testing._shared.eventually import eventually
from jobcore.testing._shared.jobreport import recording
from jobcore.testing._shared.jobreport import report
from jobcore.testing._shared.kinds import ModelKind


async def install_crd(client: Client, crd: Object) -> None:
    """Create the CRD (if new) and wait until the API server serves it."""
    with contextlib.suppress(AlreadyExistsError):
        await client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    for _ in range(100):
        current = await client.get(CUSTOM_RESOURCE_DEFINITIONS, crd["metadata"]["name"])
        conditions = current.get("status", {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"CRD {crd['metadata']['name']} was not established")


@contextlib.asynccontextmanager
async def job_controller(
    client: Client, kind: JobKind[Any], *, namespace: str | None, **options: Any
) -> AsyncIterator[Controller]:
    """The kind's CRD installed and its controller running for `namespace` (None: every
    namespace, as a deployed controller runs), for the block.

    `options` go to `add_job_controller` (`gang_scheduler`, `max_concurrent_reconciles`).
    The errors its reconciles raise are noted, for the waits below to report.
    """
    await install_crd(client, crd_for(kind))
    manager = Manager(client, metrics_address=None, health_address=None)
    controller = add_job_controller(manager, kind, namespace=namespace, **options)
    recording(controller)
    async with background(manager.run()):
        yield controller


NAMES_ONLY = "application/json;as=Table;g=meta.k8s.io;v=v1"
"""A list answer as a Table (with `includeObject=None`, its rows' names and no objects)."""


@contextlib.asynccontextmanager
async def temporary_namespace(client: Client, base: str) -> AsyncIterator[str]:
    """A fresh namespace named `base` (made DNS-safe, cut to 40 characters) and 6 random hex
    digits, deleted when the block ends (it stays Terminating without a namespace
    controller; names are unique, so nothing collides).

    Its pods are removed at once first, as a kubelet removes the pods it stopped: the test's
    node is gone, and a pod bound to it would stay Terminating for good, and its namespace
    with it, the namespace controller sweeping every resource type of it again and again
    (38 such namespaces made most of a loaded session's API requests). The deletion's answer
    is asked for as a Table without objects: as a list it holds every pod deleted, 144 MB
    for a tenant test's bulky pods."""
    safe = re.sub(r"[^a-z0-9-]+", "-", base.lower()).strip("-")[:40].rstrip("-")
    name = f"{safe}-{uuid.uuid4().hex[:6]}"
    await client.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    try:
        yield name
    finally:
        at_once = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
        with contextlib.suppress(ApiError):
            await client.request(
                "DELETE",
                PODS.path(name),
                query={"includeObject": "None"},
                body=at_once,
                accept=NAMES_ONLY,
                decode=False,
            )
        with contextlib.suppress(ApiError):
            await client.delete(NAMESPACES, name)


def schemaless_crd(resource: Resource) -> Object:
    """A namespaced CRD that accepts any spec: stands in for a third party's (a PodGroup).

    It is `crd_for`'s CRD of a kind of `resource`, but with a schema that keeps every field,
    and without what jobcore adds for its jobs: the status subresource, the printer columns
    and the `jobcore` category.
    """
    crd = crd_for(ModelKind(resource, JobSpec))
    (version,) = crd["spec"]["versions"]
    version["schema"] = {
        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    }
    del version["subresources"], version["additionalPrinterColumns"]
    del crd["spec"]["names"]["categories"]
    return crd


async def job_status(client: Client, resource: Resource, namespace: str, name: str) -> Any:
    """The job's status as stored, `{}` before the controller wrote one."""
    return (await client.get(resource, name, namespace)).get("status") or {}


async def wait_for_phase(
    client: Client,
    resource: Resource,
    namespace: str,
    name: str,
    phase: str,
    *,
    timeout: float = 30,
) -> Any:
    """Wait until the job's status.phase is `phase`; return its status.

    A job not in `phase` within `timeout` fails the test with its last phase, its conditions,
    its latest Warning Events and, under `job_controller`, its latest reconcile errors.
    """

    async def reached() -> bool:
        return bool((await job_status(client, resource, namespace, name)).get("phase") == phase)

    try:
        await eventually(reached, timeout=timeout)
    except TimeoutError:
        why = await report(client, resource, namespace, name)
        raise AssertionError(f"{name} not {phase} within {timeout} s:\n{why}") from None
    return await job_status(client, resource, namespace, name)


async def create_until_phase(
    client: Client, resource: Resource, job: Object, phase: str, *, timeout: float = 30
) -> Any:
    """Create `job` and wait until its status.phase is `phase`; return its status."""
    await client.create(resource, job)
    meta = job["metadata"]
    return await wait_for_phase(
        client, resource, meta["namespace"], meta["name"], phase, timeout=timeout
    )


async def wait_for_end(
    client: Client,
    resource: Resource,
    namespace: str,
    name: str,
    *,
    timeout: float = 90,
    explain: Callable[[], str] = lambda: "",
) -> Any:
    """Wait until the job Succeeded or Failed; return its status.

    A job that has not ended in `timeout` fails the test with what `wait_for_phase` reports
    and `explain()`, e.g. its launcher's output, which says more of a stuck run than the
    phase does.
    """

    async def ended() -> bool:
        phase = (await job_status(client, resource, namespace, name)).get("phase")
        return phase in ("Succeeded", "Failed")

    try:
        await eventually(ended, timeout=timeout, interval=0.2)
    except TimeoutError:
        why = await report(client, resource, namespace, name)
        raise AssertionError(f"{name} did not end in {timeout} s:\n{why}\n{explain()}") from None
    return await job_status(client, resource, namespace, name)


async def wait_for_phases(
    client: Client,
    resource: Resource,
    namespace: str,
    names: Sequence[str],
    phase: str,
    *,
    timeout: float = 30,
) -> None:
    """Wait until every job in `names` is in `phase`; on timeout, name those that are not,
    with what `wait_for_phase` reports of the first of them."""
    seen: dict[str, str | None] = {}

    async def reached() -> bool:
        for job in (await client.list(resource, namespace))["items"]:
            seen[job["metadata"]["name"]] = (job.get("status") or {}).get("phase")
        return all(seen.get(name) == phase for name in names)

    try:
        await eventually(reached, timeout=timeout, interval=0.2)
    except TimeoutError:
        if await reached():  # a loaded machine may time out before the first read ends
            return
        behind = {name: seen.get(name) for name in names if seen.get(name) != phase}
        first = next(iter(behind))
        why = await report(client, resource, namespace, first)
        raise AssertionError(f"not {phase} within {timeout} s: {behind}; {first}:\n{why}") from None


def condition(status: Any, kind: str) -> Any:
    """The status condition of type `kind`; KeyError if it has none."""
    for found in status.get("conditions") or ():
        if found["type"] == kind:
            return found
    raise KeyError(kind)


async def live_pods(client: Client, namespace: str) -> dict[str, Object]:
    """The namespace's pods that are not being deleted, by name."""
    items = (await client.list(PODS, namespace))["items"]
    return {p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")}


async def wait_for_pods(
    client: Client,
    namespace: str,
    names: Collection[str],
    *,
    phase: str | None = None,
    timeout: float = 20,
) -> dict[str, Object]:
    """Wait until the namespace's live pods are exactly `names`, each in `phase` if given;
    return them by name. On timeout, fail naming the pods and phases last seen."""
    pods: dict[str, Object] = {}

    async def reached() -> bool:
        pods.clear()
        pods.update(await live_pods(client, namespace))
        return set(pods) == set(names) and all(
            phase is None or pod.get("status", {}).get("phase") == phase for pod in pods.values()
        )

    try:
        await eventually(reached, timeout=timeout, interval=0.1)
    except TimeoutError:
        seen = {name: pod.get("status", {}).get("phase") for name, pod in pods.items()}
        wanted = f"{sorted(names)}" + (f", each {phase}" if phase else "")
        raise AssertionError(f"pods not {wanted} within {timeout} s: {seen}") from None
    return pods


async def controller_uids(
    client: Client, namespace: str, children: Iterable[tuple[Resource, str]]
) -> list[str | None]:
    """The uid of each child's controller (its ownerReference with `controller: true`), or
    None for a child that has none; in the order of `children`, given as (resource, name)."""
    uids: list[str | None] = []
    for resource, name in children:
        refs = (await client.get(resource, name, namespace))["metadata"].get("ownerReferences")
        uids.append(next((ref["uid"] for ref in refs or () if ref.get("controller")), None))
    return uids


async def created_after_ready(
    client: Client, namespace: str, pod: str, others: Iterable[str]
) -> bool:
    """Whether all `others` are Ready and the pod `pod` was created no sooner than the last of
    them turned Ready.

    Both times are stored to the second: give `others` a readiness delay of 2 s or more
    (`SimulatedNode(ready_after=...)`), so that a pod made before they were Ready shows it.
    """
    pods = await live_pods(client, namespace)
    ready = [condition(pods[name]["status"], "Ready") for name in others]
    if any(c["status"] != "True" for c in ready):
        return False
    latest = max(c["lastTransitionTime"] for c in ready)
    return bool(pods[pod]["metadata"]["creationTimestamp"] >= latest)


async def wait_for_deletion(
    client: Client, resource: Resource, namespace: str | None, name: str, *, timeout: float = 30
) -> None:
    """Wait until the object `name` is gone from the API server (finalizers and all)."""

    async def deleted() -> bool:
        try:
            await client.get(resource, name, namespace)
        except NotFoundError:
            return True
        return False

    await eventually(deleted, timeout=timeout, interval=0.1)


async def event_reasons(
    client: Client, namespace: str, name: str, *, kind: str | None = None
) -> list[str]:
    """The reasons of the events recorded about the object `name` (of `kind`), oldest first."""
    return [reason for reason, _ in await events_of(client, namespace, name, kind=kind)]


async def wait_for_events(
    client: Client,
    namespace: str,
    name: str,
    *reasons: str,
    kind: str | None = None,
    timeout: float = 10,
) -> list[str]:
    """Wait until events of each of `reasons` are recorded about `name` (of `kind`); all its
    reasons.

    A controller records events in the background, so one may land just after the status
    that announced it.
    """
    found: list[str] = []

    async def recorded() -> bool:
        found[:] = await event_reasons(client, namespace, name, kind=kind)
        return set(reasons) <= set(found)

    await eventually(recorded, timeout=timeout, interval=0.1)
    return found


async def events_of(
    client: Client, namespace: str, name: str, *, kind: str | None = None
) -> list[tuple[str, str]]:
    """The (reason, message) of each event recorded about the object `name`, oldest first.

    With `kind`, only about the object of that kind: in a cluster that runs Kubernetes' own
    controllers, a job's Service of the same name gets events too (e.g. the EndpointSlice
    controller's).
    """
    items = (await client.list(EVENTS, namespace))["items"]
    about = [e for e in items if e["involvedObject"]["name"] == name]
    if kind is not None:
        about = [e for e in about if e["involvedObject"]["kind"] == kind]
    return [(e["reason"], e["message"]) for e in about]
