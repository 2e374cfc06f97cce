"""An asyncio Kubernetes client over plain JSON objects, with retries of transient failures.

Each method says which request it is (path, query, body, content type) and whether it may be
sent again; `jobcore._runtime.transport` sends it.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import AsyncIterator
from collections.abc import Mapping
from typing import Any
from typing import Literal

from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from jobcore._runtime import fencing
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource
from jobcore._runtime.retry import Retries
from jobcore._runtime.retry import is_repeatable
from jobcore._runtime.transport import Transport
from jobcore._runtime.watchstream import MAX_EVENT_BYTES
from jobcore._runtime.watchstream import SkippedEvents
from jobcore._runtime.watchstream import WatchEvent
from jobcore._runtime.watchstream import cut_lines
from jobcore._runtime.watchstream import watch_events

PatchType = Literal["merge", "strategic", "json"]

_PATCH_CONTENT_TYPES: Mapping[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
_APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
_ANY = "*/*"
"""What a log request accepts: the server answers text/plain, not JSON."""
MAX_LOG_LINE_BYTES = 64 * 2**10
"""The longest line `follow_pod_log` yields; a longer one is cut there."""

DEFAULT_MAX_CONNECTIONS = 100
"""Connections to the API server a client opens at most (kubernetes-asyncio's default)."""


class Client:
    """Reads and writes any resource as plain dicts; one per process, closed on exit.

    With `qps`, a token bucket spaces the requests: `burst` may go at once, then `qps` a
    second; each send waits for its token, a retry's and a watch's start included.
    Transient failures (connection errors, timeouts, 429, 5xx) are retried, up to
    `retry_attempts` sends in all, with jittered exponential backoff of at most
    `retry_max_wait` seconds, or longer when the server's `Retry-After` asks for it; an answer
    asking for more than `retry_after_max` is raised at once (`jobcore._runtime.retry.Retries`). A
    failure that leaves open whether the server acted (a reset, a timeout, a 5xx) is retried
    only for a request that is safe to repeat: GET, PUT, DELETE, a patch that sets values, a
    create of a named object; such a create may then raise AlreadyExistsError for the object
    its first send made. Every other failure is raised as the matching `ApiError` subclass,
    so a conflict reaches the caller, who re-reads and decides. (aiohttp itself resends a
    GET, PUT or DELETE once when a kept-alive connection turns out closed.) A watch reads
    events of up to `max_event_bytes`, whatever their size.
    """

    def __init__(
        self,
        api_client: k8s_client.ApiClient,
        *,
        field_manager: str = "jobcore",
        retry_attempts: int = 6,
        retry_max_wait: float = 5.0,
        retry_after_max: float = 5.0,
        request_timeout: float = 60.0,
        max_event_bytes: int = MAX_EVENT_BYTES,
        qps: float | None = None,
        burst: int = 1,
    ) -> None:
        self._transport = Transport(
            api_client, request_timeout=request_timeout, qps=qps, burst=burst
        )
        self.field_manager = field_manager
        self._retries = Retries(retry_attempts, retry_max_wait, retry_after_max)
        self._max_event_bytes = max_event_bytes
        self._skipped = SkippedEvents()

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | None = None,
        *,
        context: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        **options: Any,
    ) -> Client:
        """A client for the kubeconfig at `path` (default: `$KUBECONFIG` or ~/.kube/config).

        At most `max_connections` requests are in flight at once (each open connection
        holds about 0.3 MB of TLS buffers); more wait for a free connection.
        """
        configuration = type.__call__(k8s_client.Configuration)  # not the shared default
        await k8s_config.load_kube_config(
            config_file=path, context=context, client_configuration=configuration
        )
        return cls._configured(configuration, max_connections, options)

    @classmethod
    async def from_environment(
        cls, *, max_connections: int = DEFAULT_MAX_CONNECTIONS, **options: Any
    ) -> Client:
        """The in-cluster service account when running in a Pod, else the kubeconfig."""
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            configuration = type.__call__(k8s_client.Configuration)
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            return cls._configured(configuration, max_connections, options)
        return await cls.from_kubeconfig(max_connections=max_connections, **options)

    @classmethod
    def _configured(
        cls, configuration: k8s_client.Configuration, max_connections: int, options: dict[str, Any]
    ) -> Client:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        configuration.connection_pool_maxsize = max_connections
        return cls(k8s_client.ApiClient(configuration), **options)

    def with_own_rate_limit(self) -> Client:
        """This client with a token bucket of its own (of the same `qps` and `burst`): it
        shares the connections, but its requests never wait behind this one's. Lease renewals
        go through one, so a burst of reconciles cannot cost the lease. Close the original."""
        twin = copy.copy(self)
        twin._transport = self._transport.with_own_bucket()
        return twin

    def fenced(self, fence: fencing.Fence) -> Client:
        """This client, sharing connections and token bucket, whose every write (POST, PUT,
        PATCH, DELETE) first calls `fence`, which raises to refuse it: each send is checked,
        a retry's too, after its wait for a token, so a write held up past the moment the
        fence closes is never sent."""
        twin = copy.copy(self)
        twin._transport = self._transport.fenced(fence)
        return twin

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        decode: bool = True,
        accept: str = "application/json",
    ) -> Any:
        """Send one request, retrying transient failures; return the decoded JSON body (its
        bytes without `decode`: a large object's answer is not worth decoding when unread,
        and a log is not JSON)."""
        return await self._retries.send(
            functools.partial(
                self._transport.send,
                method,
                path,
                query,
                body,
                content_type,
                decode=decode,
                accept=accept,
            ),
            repeatable=is_repeatable(method, body, content_type),
            method=method,
            path=path,
        )

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        result: Object = await self.request("GET", resource.path(namespace, name))
        return result

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> Object:
        """One page of a list: `items`, and `metadata.resourceVersion` / `continue`."""
        query = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "limit": limit,
            "continue": continue_token,
            "resourceVersion": resource_version,
        }
        result: Object = await self.request("GET", resource.path(namespace), query=query)
        return result

    async def create(self, resource: Resource, obj: Object, namespace: str | None = None) -> Object:
        """Create `obj`; raises AlreadyExistsError if it exists.

        That includes a create whose answer was lost and that was sent again: the object is
        there, made by the first send. Take AlreadyExistsError as "it exists".
        """
        namespace = namespace or obj.get("metadata", {}).get("namespace")
        result: Object = await self.request("POST", resource.path(namespace), body=obj)
        return result

    async def update(self, resource: Resource, obj: Object) -> Object:
        """Replace the object; raises ConflictError if its resourceVersion is stale."""
        meta = obj["metadata"]
        path = resource.path(meta.get("namespace"), meta["name"])
        result: Object = await self.request("PUT", path, body=obj)
        return result

    async def update_status(self, resource: Resource, obj: Object) -> Object:
        """Replace the status subresource; raises ConflictError if the object changed."""
        meta = obj["metadata"]
        path = resource.path(meta.get("namespace"), meta["name"], "status")
        result: Object = await self.request("PUT", path, body=obj)
        return result

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
    ) -> Object:
        result: Object = await self.request(
            "PATCH",
            resource.path(namespace, name, subresource),
            body=patch,
            content_type=_PATCH_CONTENT_TYPES[patch_type],
        )
        return result

    async def apply(
        self,
        resource: Resource,
        obj: Object,
        *,
        force: bool = False,
        subresource: str | None = None,
    ) -> Object:
        """Server-side apply `obj` as this client's field manager."""
        meta = obj["metadata"]
        query = {"fieldManager": self.field_manager, "force": "true" if force else None}
        result: Object = await self.request(
            "PATCH",
            resource.path(meta.get("namespace"), meta["name"], subresource),
            query=query,
            body=obj,
            content_type=_APPLY_CONTENT_TYPE,
        )
        return result

    async def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = "Background",
        grace_period_seconds: int | None = None,
        uid: str | None = None,
    ) -> Object:
        """Delete the object (only the one with `uid`, when given); raises NotFoundError."""
        body: Object = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if uid:
            body["preconditions"] = {"uid": uid}
        result: Object = await self.request("DELETE", resource.path(namespace, name), body=body)
        return result

    async def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        inactivity_timeout: float = 90.0,
        allow_bookmarks: bool = True,
        without_managed_fields: bool = False,
    ) -> AsyncIterator[WatchEvent]:
        """Stream changes after `resource_version` until the server ends the watch.

        The stream also ends, without error, when nothing (not even a bookmark) arrives for
        `inactivity_timeout` seconds, so a silently dead connection is noticed; the caller
        watches again from the last resourceVersion it saw. A stream broken midway (a reset, or
        a cut inside an event) raises a retryable `ApiError` (status 0), after the events that
        arrived whole; the caller watches again the same way. An expired resourceVersion raises
        `GoneError`; the caller must list again. An event longer than `max_event_bytes` (by
        default more than any object the server stores makes), or a line that is not an event,
        is skipped and logged once per client (`jobcore._runtime.watchstream`). With
        `without_managed_fields`, a built-in object's `metadata.managedFields` is left
        undecoded (`jsoncodec.loads_without_managed_fields`); other objects may still carry it.
        """
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "timeoutSeconds": timeout_seconds,
            "allowWatchBookmarks": "true" if allow_bookmarks else None,
        }
        what = resource.path(namespace)
        stream = self._transport.stream(what, query, inactivity_timeout=inactivity_timeout)
        async with stream as chunks:
            async for event in watch_events(
                chunks,
                what,
                self._skipped,
                limit=self._max_event_bytes,
                without_managed_fields=without_managed_fields,
            ):
                yield event

    async def pod_log(
        self,
        name: str,
        namespace: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
        previous: bool = False,
    ) -> str:
        """A container's log as its node keeps it (`pods/log`), decoded as UTF-8 with
        replacement characters. `container` may be left out for a pod of one container.
        A missing pod raises NotFoundError; a container not started yet, or without a
        `previous` run, is the server's 400 (`ApiError`)."""
        query = _log_query(container, tail_lines, limit_bytes)
        query["previous"] = "true" if previous else None
        path = PODS.path(namespace, name, "log")
        data: bytes = await self.request("GET", path, query=query, decode=False, accept=_ANY)
        return data.decode(errors="replace")

    async def follow_pod_log(
        self,
        name: str,
        namespace: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
    ) -> AsyncIterator[str]:
        """Each line of a container's log, without its newline, as it arrives (`follow`).

        A line longer than `MAX_LOG_LINE_BYTES` is cut there. The iteration ends when the
        server ends the stream (the container ended); a quiet log is waited for however
        long, with no inactivity timeout. Errors are those of `pod_log`, and a broken
        connection's retryable `ApiError` (status 0).
        """
        query = _log_query(container, tail_lines, limit_bytes)
        query["follow"] = "true"
        what = PODS.path(namespace, name, "log")
        stream = self._transport.stream(
            what, query, inactivity_timeout=None, accept=_ANY, verb="GET"
        )
        async with stream as chunks:
            async for line in cut_lines(chunks, limit=MAX_LOG_LINE_BYTES):
                yield line.decode(errors="replace")


def _log_query(
    container: str | None, tail_lines: int | None, limit_bytes: int | None
) -> dict[str, Any]:
    return {"container": container, "tailLines": tail_lines, "limitBytes": limit_bytes}
