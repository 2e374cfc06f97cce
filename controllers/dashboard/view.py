"""What the dashboard shows, kept live from watches: every installed kind's jobs, their pods and
the Events about either.

One informer per kind, one for the pods jobcore labels (`JOB_NAME_LABEL`) and one for the
Events about those jobs and pods; pages read these caches, so nothing asks the API server per
job or per refresh. Each change marks the job it belongs to in every open live page's
`Subscription`, so the work of an update grows with what changed, not with the cluster.

The caches hold what the pages show, not whole objects: a job without its spec (the job page
reads the stored object once, when it opens), a pod without its spec but for its node and
container names, and messages cut to `MAX_MESSAGE` characters. So a tenant's oversized
objects cannot grow the dashboard by their size.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from controllers.kinds import InstalledKind
from jobcore import EVENTS
from jobcore import PODS
from jobcore import Client
from jobcore import Informer
from jobcore import Object
from jobcore import strip_bulk
from jobcore.jobs import JOB_KIND_LABEL
from jobcore.jobs import JOB_NAME_LABEL

MAX_MESSAGE = 2048
"""The most characters of a status message, termination message or Event note kept."""
_JOB_INDEX = "job"
_INVOLVED_INDEX = "involved"


@dataclass(frozen=True, slots=True, order=True)
class JobRef:
    """A job as the dashboard names it: its kind's entry-point name, namespace and name."""

    kind: str
    namespace: str
    name: str

    @property
    def path(self) -> str:
        """The job page's path."""
        return f"/jobs/{self.kind}/{self.namespace}/{self.name}"

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


RECENT_CHANGES = 8192
"""How many changes `ClusterView.changed_since` remembers."""


class Subscription:
    """The jobs that changed since a live page last looked: a set, so a job that changed a
    hundred times is rendered once."""

    def __init__(self) -> None:
        self._changed: set[JobRef] = set()
        self._wake = asyncio.Event()

    def mark(self, ref: JobRef) -> None:
        self._changed.add(ref)
        self._wake.set()

    async def changes(self, settle: float) -> set[JobRef]:
        """Wait for a change, then `settle` seconds more for the changes that come with it
        (a job's pods change together), then take every job marked since the last call."""
        await self._wake.wait()
        await asyncio.sleep(settle)
        self._wake.clear()
        changed, self._changed = self._changed, set()
        return changed


def _cut(text: Any) -> Any:
    return text[:MAX_MESSAGE] if isinstance(text, str) and len(text) > MAX_MESSAGE else text


def _slim_job(obj: Object) -> Object:
    """A job as the pages list it: metadata and status, no spec."""
    meta = strip_bulk(obj)["metadata"]
    status = dict(obj.get("status") or {})
    status["conditions"] = [
        {**c, "message": _cut(c.get("message"))} for c in status.get("conditions") or ()
    ]
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": meta,
        "status": status,
    }


def _slim_container_status(status: Object) -> Object:
    def state(given: Object | None) -> Object:
        return {
            name: {**part, "message": _cut(part.get("message"))}
            for name, part in (given or {}).items()
            if isinstance(part, dict)
        }

    return {
        "name": status.get("name"),
        "ready": status.get("ready"),
        "restartCount": status.get("restartCount", 0),
        "state": state(status.get("state")),
        "lastState": state(status.get("lastState")),
    }


def _slim_pod(obj: Object) -> Object:
    """A pod as the pages show it: who it belongs to, its node, phase and containers."""
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return {
        "metadata": {
            key: meta[key]
            for key in (
                "name",
                "namespace",
                "uid",
                "labels",
                "creationTimestamp",
                "deletionTimestamp",
                "resourceVersion",
            )
            if key in meta
        },
        "spec": {
            "nodeName": spec.get("nodeName"),
            "containers": [{"name": c.get("name")} for c in spec.get("containers") or ()],
        },
        "status": {
            "phase": status.get("phase"),
            "reason": status.get("reason"),
            "message": _cut(status.get("message")),
            "startTime": status.get("startTime"),
            "conditions": [
                {"type": c.get("type"), "status": c.get("status")}
                for c in status.get("conditions") or ()
            ],
            "containerStatuses": [
                _slim_container_status(c) for c in status.get("containerStatuses") or ()
            ],
        },
    }


def _slim_event(obj: Object) -> Object:
    keep = ("type", "reason", "count", "firstTimestamp", "lastTimestamp", "eventTime")
    return {
        "metadata": {k: obj["metadata"].get(k) for k in ("name", "namespace", "uid")},
        "involvedObject": obj.get("involvedObject") or {},
        "message": _cut(obj.get("message")),
        "source": obj.get("source") or {},
        **{key: obj.get(key) for key in keep},
    }


def _pod_job_key(pod: Object) -> Iterable[str]:
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    if JOB_NAME_LABEL in labels:
        yield f"{labels.get(JOB_KIND_LABEL)}/{meta.get('namespace')}/{labels[JOB_NAME_LABEL]}"


def _involved_key(event: Object) -> Iterable[str]:
    involved = event.get("involvedObject") or {}
    yield f"{involved.get('kind')}/{involved.get('namespace')}/{involved.get('name')}"


class _Relay:
    """An informer's changes, as the jobs they belong to, to the view."""

    def __init__(self, refs: Any, view: ClusterView) -> None:
        self._refs = refs
        self._view = view

    def on_add(self, obj: Object) -> None:
        self._view.changed(self._refs(obj))

    def on_update(self, old: Object, new: Object) -> None:
        self._view.changed(self._refs(new))

    def on_delete(self, obj: Object) -> None:
        self._view.changed(self._refs(obj))


class ClusterView:
    """The caches behind every page: `jobs` by kind name, `pods` and `events`.

    With `namespace`, only that namespace is watched (a user whose RBAC reaches no further).
    """

    def __init__(
        self, client: Client, kinds: Sequence[InstalledKind], namespace: str | None = None
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.kinds = {installed.name: installed for installed in kinds}
        self.jobs = {
            name: Informer(
                client, installed.kind.resource, namespace=namespace, transform=_slim_job
            )
            for name, installed in self.kinds.items()
        }
        self.pods = Informer(
            client,
            PODS,
            namespace=namespace,
            label_selector=JOB_NAME_LABEL,
            transform=_slim_pod,
            indexers={_JOB_INDEX: _pod_job_key},
        )
        self._kind_names = {i.kind.resource.kind for i in kinds}
        self.events = Informer(
            client,
            EVENTS,
            namespace=namespace,
            keep=self._about_a_job,
            transform=_slim_event,
            indexers={_INVOLVED_INDEX: _involved_key},
        )
        self._subscriptions: set[Subscription] = set()
        self.version = 0
        """How many changes the view has seen: a page rendered at one version asks its live
        stream for what changed after it (`changed_since`)."""
        self._recent: deque[JobRef] = deque(maxlen=RECENT_CHANGES)
        for name, informer in self.jobs.items():
            informer.add_handler(_Relay(lambda obj, name=name: [self._ref(name, obj)], self))
        self.pods.add_handler(_Relay(self._pod_refs, self))
        self.events.add_handler(_Relay(self._event_refs, self))

    # Running -----------------------------------------------------------------------------

    def informers(self) -> list[Informer]:
        return [*self.jobs.values(), self.pods, self.events]

    async def run(self) -> None:
        """Watch until cancelled (each informer retries its own failures)."""
        async with asyncio.TaskGroup() as group:
            for informer in self.informers():
                group.create_task(informer.run())

    def synced(self) -> bool:
        return all(informer.has_synced() for informer in self.informers())

    def unsynced(self) -> list[str]:
        """The resources not listed yet (not served, or not readable with these rights)."""
        return [i.resource.plural for i in self.informers() if not i.has_synced()]

    @contextlib.contextmanager
    def subscribe(self) -> Iterator[Subscription]:
        """A live page's subscription, for as long as the page is open."""
        subscription = Subscription()
        self._subscriptions.add(subscription)
        try:
            yield subscription
        finally:
            self._subscriptions.discard(subscription)

    def changed(self, refs: Iterable[JobRef]) -> None:
        for ref in refs:
            self.version += 1
            self._recent.append(ref)
            for subscription in self._subscriptions:
                subscription.mark(ref)

    def changed_since(self, version: int) -> set[JobRef] | None:
        """The jobs that changed after `version`; None when that is too long ago to tell."""
        behind = self.version - version
        if behind < 0 or behind > len(self._recent):
            return None
        return set(list(self._recent)[len(self._recent) - behind :]) if behind else set()

    # Reading -----------------------------------------------------------------------------

    def job(self, ref: JobRef) -> Object | None:
        informer = self.jobs.get(ref.kind)
        return informer.get(ref.name, ref.namespace) if informer is not None else None

    def all_jobs(self) -> Iterator[tuple[JobRef, Object]]:
        for name, informer in self.jobs.items():
            for obj in informer.list():
                yield self._ref(name, obj), obj

    def pods_of(self, ref: JobRef) -> list[Object]:
        """The job's pods, by replica type and index (the labels jobcore sets)."""
        kind = self.kinds[ref.kind].kind.resource.kind
        return self.pods.by_index(_JOB_INDEX, f"{kind}/{ref.namespace}/{ref.name}")

    def events_of(self, ref: JobRef) -> list[Object]:
        """The Events about the job and about each of its pods, oldest first."""
        kind = self.kinds[ref.kind].kind.resource.kind
        keys = [f"{kind}/{ref.namespace}/{ref.name}"]
        keys += [f"Pod/{ref.namespace}/{pod['metadata']['name']}" for pod in self.pods_of(ref)]
        events = [event for key in keys for event in self.events.by_index(_INVOLVED_INDEX, key)]
        return sorted(events, key=event_time)

    # Mapping changes to jobs ---------------------------------------------------------------

    @staticmethod
    def _ref(name: str, obj: Object) -> JobRef:
        meta = obj["metadata"]
        return JobRef(name, meta.get("namespace") or "", meta["name"])

    def _refs_named(self, kind: str | None, namespace: str, name: str) -> list[JobRef]:
        """The jobs of every installed kind named `kind` (two kinds may share one: Kubeflow's
        and T9k's MPIJob) with that name."""
        return [
            JobRef(entry, namespace, name)
            for entry, installed in self.kinds.items()
            if installed.kind.resource.kind == kind
        ]

    def _pod_refs(self, pod: Object) -> list[JobRef]:
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        return self._refs_named(
            labels.get(JOB_KIND_LABEL), meta.get("namespace") or "", labels[JOB_NAME_LABEL]
        )

    def _event_refs(self, event: Object) -> list[JobRef]:
        involved = event.get("involvedObject") or {}
        namespace, name = involved.get("namespace") or "", involved.get("name") or ""
        if involved.get("kind") != "Pod":
            return self._refs_named(involved.get("kind"), namespace, name)
        pod = self.pods.get(name, namespace)
        return self._pod_refs(pod) if pod is not None else []

    def _about_a_job(self, event: Object) -> bool:
        """Keep an Event about a job of an installed kind, or about one of the jobs' pods."""
        involved = event.get("involvedObject") or {}
        kind = involved.get("kind")
        if kind == "Pod":
            return self.pods.get(involved.get("name", ""), involved.get("namespace")) is not None
        return kind in self._kind_names


def event_time(event: Object) -> str:
    """When the Event last happened, as the API writes times (so they sort as text)."""
    return str(event.get("lastTimestamp") or event.get("eventTime") or "")
