"""An asyncio Kubernetes client over plain JSON objects, with retries of transient failures."""

from __future__ import annotations

import asyncio
import copy
import functools
import os
from collections.abc import AsyncIterator
from collections.abc import Mapping
from typing import Any
from typing import Literal
from urllib.parse import urlencode
from urllib.parse import urlsplit

import aiohttp
import structlog
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from jobcore._runtime import fencing
from jobcore._runtime import metrics
from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import api_error
from jobcore._runtime.jsoncodec import decode_error
from jobcore._runtime.jsoncodec import dumps
from jobcore._runtime.jsoncodec import loads
from jobcore._runtime.ratelimit import BucketRateLimiter
from jobcore._runtime.resources import Object
from jobcore._runtime.resources import Resource
from jobcore._runtime.retry import Retries
from jobcore._runtime.retry import is_repeatable
from jobcore._runtime.retry import parse_retry_after
from jobcore._runtime.watchstream import MAX_EVENT_BYTES
from jobcore._runtime.watchstream import SkippedEvents
from jobcore._runtime.watchstream import WatchEvent
from jobcore._runtime.watchstream import watch_events

PatchType = Literal["merge", "strategic", "json"]

_PATCH_CONTENT_TYPES: Mapping[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
_APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_log = structlog.get_logger("jobcore.client")
_READ_BUFFER = 2**16
"""aiohttp stops reading a response with twice this unread: a watch ahead of the controller
waits in the kernel, not in freed memory the process keeps (2 MiB here buffered 4 MiB)."""


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
        self._api_client = api_client
        self._config = api_client.configuration
        # Our own session on kubernetes-asyncio's connector (its TLS set-up), without
        # trust_env: that would look up ~/.netrc and proxy variables in a thread on every
        # request. A proxy named in the kubeconfig is still used.
        self._session = aiohttp.ClientSession(
            connector=api_client.rest_client.pool_manager.connector,
            connector_owner=False,
            trust_env=False,
            read_bufsize=_READ_BUFFER,
            trace_configs=[fencing.fence_trace()],
        )
        self._proxy = self._config.proxy
        self._server_hostname = api_client.rest_client.server_hostname
        self._host = str(self._config.host).rstrip("/")
        self._metrics_host = urlsplit(self._host).netloc
        self.field_manager = field_manager
        self._retries = Retries(retry_attempts, retry_max_wait, retry_after_max)
        self._rate = (qps, burst)
        self._bucket = BucketRateLimiter(qps, burst) if qps is not None else None
        self._request_timeout = aiohttp.ClientTimeout(total=request_timeout)
        self._max_event_bytes = max_event_bytes
        self._skipped = SkippedEvents()
        self._fence: fencing.Fence | None = None

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
        qps, burst = self._rate
        twin._bucket = BucketRateLimiter(qps, burst) if qps is not None else None
        return twin

    def fenced(self, fence: fencing.Fence) -> Client:
        """This client, sharing connections and token bucket, whose every write (POST, PUT,
        PATCH, DELETE) first calls `fence`, which raises to refuse it: each send is checked,
        a retry's too, after its wait for a token, so a write held up past the moment the
        fence closes is never sent."""
        twin = copy.copy(self)
        twin._fence = fence
        return twin

    async def _throttle(self, method: str) -> None:
        """Wait for this request's token, when the client has a rate limit."""
        if self._bucket is None:
            return
        delay = self._bucket.when(None)
        metrics.rest_client_rate_limiter_duration_seconds.labels(
            method, self._metrics_host
        ).observe(delay)
        if delay > 0:
            await asyncio.sleep(delay)

    async def close(self) -> None:
        await self._session.close()
        await self._api_client.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _headers(self, content_type: str) -> dict[str, str]:
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        for setting in (await self._config.auth_settings()).values():
            headers[setting["key"]] = setting["value"]
        return headers

    def _request_args(self, method: str, path: str, query: Mapping[str, Any] | None) -> Any:
        url = self._host + path
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        args: dict[str, Any] = {"method": method, "url": url}
        if self._proxy:
            args["proxy"] = self._proxy
        if self._server_hostname:
            args["server_hostname"] = self._server_hostname
        return args

    async def _request_once(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        *,
        decode: bool,
    ) -> Any:
        await self._throttle(method)
        args = self._request_args(method, path, query)
        args["headers"] = await self._headers(content_type)
        if body is not None:
            args["data"] = dumps(body)
        fence = self._fence if method in _WRITES else None
        if fence is not None:
            fence()  # and again once the request has its connection: see fencing
        args["trace_request_ctx"] = fence
        try:
            async with self._session.request(**args, timeout=self._request_timeout) as resp:
                data = await resp.read()
                status = resp.status
                retry_after = parse_retry_after(resp.headers.get("Retry-After"))
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            metrics.rest_client_requests_total.labels("<error>", method, self._metrics_host).inc()
            raise ApiError(0, "ConnectionError", f"{method} {path}: {exc!r}") from exc
        metrics.rest_client_requests_total.labels(str(status), method, self._metrics_host).inc()
        if status >= 400:
            raise api_error(status, decode_error(data), retry_after=retry_after)
        return loads(data) if data and decode else None

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        decode: bool = True,
    ) -> Any:
        """Send one request, retrying transient failures; return the decoded JSON body (None
        without `decode`: a large object's answer is not worth decoding when unread)."""
        return await self._retries.send(
            functools.partial(
                self._request_once, method, path, query, body, content_type, decode=decode
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
        await self._throttle("WATCH")
        args = self._request_args("GET", what, query)
        args["headers"] = await self._headers("application/json")
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=inactivity_timeout)
        try:
            async with self._session.request(**args, timeout=timeout) as resp:
                metrics.rest_client_requests_total.labels(
                    str(resp.status), "WATCH", self._metrics_host
                ).inc()
                if resp.status >= 400:
                    raise api_error(
                        resp.status,
                        decode_error(await resp.read()),
                        retry_after=parse_retry_after(resp.headers.get("Retry-After")),
                    )
                async for event in watch_events(
                    resp.content.iter_any(),
                    what,
                    self._skipped,
                    limit=self._max_event_bytes,
                    without_managed_fields=without_managed_fields,
                ):
                    yield event
        except (TimeoutError, aiohttp.ServerTimeoutError):
            _log.debug("watch inactive, ending it", resource=resource.plural)
        except (aiohttp.ClientError, OSError) as exc:
            raise ApiError(0, "ConnectionError", f"watch {what}: {exc!r}") from exc
