"""One HTTP exchange with the API server: the session, its token, its fence, its answer.

Apart from `Client` so that the client says which request each call is and when it is sent
again, and this module alone how it goes over aiohttp: the kubeconfig's credentials, proxy and
TLS name, the rate limit's token, a write's fence, the request metrics, and a failure mapped to
an `ApiError` (status 0 for a connection that broke).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode
from urllib.parse import urlsplit

import aiohttp
import structlog
from kubernetes_asyncio import client as k8s_client

from jobcore._runtime import fencing
from jobcore._runtime import metrics
from jobcore._runtime.errors import ApiError
from jobcore._runtime.errors import api_error
from jobcore._runtime.jsoncodec import decode_error
from jobcore._runtime.jsoncodec import dumps
from jobcore._runtime.jsoncodec import loads
from jobcore._runtime.ratelimit import BucketRateLimiter
from jobcore._runtime.retry import parse_retry_after

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_log = structlog.get_logger("jobcore.client")
JSON = "application/json"
_READ_BUFFER = 2**16
"""aiohttp stops reading a response with twice this unread: a watch ahead of the controller
waits in the kernel, not in freed memory the process keeps (2 MiB here buffered 4 MiB)."""


class Transport:
    """Sends requests over kubernetes-asyncio's connections, once each: retries are the caller's.

    With `qps`, a token bucket spaces the sends: `burst` may go at once, then `qps` a second.
    """

    def __init__(
        self,
        api_client: k8s_client.ApiClient,
        *,
        request_timeout: float,
        qps: float | None,
        burst: int,
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
        self._rate = (qps, burst)
        self._bucket = BucketRateLimiter(qps, burst) if qps is not None else None
        self._request_timeout = aiohttp.ClientTimeout(total=request_timeout)
        self._fence: fencing.Fence | None = None

    def with_own_bucket(self) -> Transport:
        """This transport, its connections shared, with a token bucket of its own."""
        twin = copy.copy(self)
        qps, burst = self._rate
        twin._bucket = BucketRateLimiter(qps, burst) if qps is not None else None
        return twin

    def fenced(self, fence: fencing.Fence) -> Transport:
        """This transport, whose every write calls `fence` first, and again once the write
        has its connection (`fencing.fence_trace`): `fence` raises to refuse it."""
        twin = copy.copy(self)
        twin._fence = fence
        return twin

    async def close(self) -> None:
        await self._session.close()
        await self._api_client.close()

    async def send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        *,
        decode: bool,
        accept: str = JSON,
    ) -> Any:
        """Send one request after its token; its decoded JSON answer (its bytes without
        `decode`), or the matching `ApiError`."""
        await self._throttle(method)
        args = await self._request_args(method, path, query, content_type, accept)
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
        if not decode:
            return data
        return loads(data) if data else None

    @contextlib.asynccontextmanager
    async def stream(
        self,
        path: str,
        query: Mapping[str, Any],
        *,
        inactivity_timeout: float | None,
        accept: str = JSON,
        verb: str = "WATCH",
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """A GET's answer as its chunks arrive, after its token: a watch, or a followed log
        (`verb` names it in the metrics).

        Nothing read for `inactivity_timeout` seconds (None: no limit) ends the stream without
        error; a connection that breaks raises a retryable `ApiError` (status 0), an error
        answer the matching `ApiError`.
        """
        await self._throttle(verb)
        args = await self._request_args("GET", path, query, JSON, accept)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=inactivity_timeout)
        try:
            async with self._session.request(**args, timeout=timeout) as resp:
                metrics.rest_client_requests_total.labels(
                    str(resp.status), verb, self._metrics_host
                ).inc()
                if resp.status >= 400:
                    raise api_error(
                        resp.status,
                        decode_error(await resp.read()),
                        retry_after=parse_retry_after(resp.headers.get("Retry-After")),
                    )
                yield resp.content.iter_any()
        except (TimeoutError, aiohttp.ServerTimeoutError):
            _log.debug("stream inactive, ending it", path=path)
        except (aiohttp.ClientError, OSError) as exc:
            raise ApiError(0, "ConnectionError", f"{verb} {path}: {exc!r}") from exc

    async def _throttle(self, method: str) -> None:
        """Wait for this request's token, when there is a rate limit."""
        if self._bucket is None:
            return
        delay = self._bucket.when(None)
        metrics.rest_client_rate_limiter_duration_seconds.labels(
            method, self._metrics_host
        ).observe(delay)
        if delay > 0:
            await asyncio.sleep(delay)

    async def _request_args(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        content_type: str,
        accept: str,
    ) -> dict[str, Any]:
        url = self._host + path
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        headers = {"Content-Type": content_type, "Accept": accept}
        for setting in (await self._config.auth_settings()).values():
            headers[setting["key"]] = setting["value"]
        args: dict[str, Any] = {"method": method, "url": url, "headers": headers}
        if self._proxy:
            args["proxy"] = self._proxy
        if self._server_hostname:
            args["server_hostname"] = self._server_hostname
        return args
