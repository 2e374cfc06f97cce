"""The dashboard's web server: read-only pages over the `ClusterView`, hardened for a browser
that also visits other sites.

Every answer carries a Content-Security-Policy that lets the page run only the bundled script
from this server (no inline script, no other origin), so text that slipped into the HTML could
still not run. Requests whose Host is not one the server was told to answer to are refused, so
a hostile site cannot reach the local dashboard (and the user's credentials) by DNS rebinding.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import AsyncIterator
from collections.abc import Iterable
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Handler
from aiohttp.typedefs import Middleware

from controllers.dashboard import pages
from controllers.dashboard.view import ClusterView

STATIC = Path(__file__).parent / "static"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
_LOCAL_NAMES = frozenset({"localhost"})


def _host_name(host: str) -> str:
    """`Host`'s name without its port (`[::1]:8080` -> `::1`)."""
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _loopback(name: str) -> bool:
    if name in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _guard(allowed_hosts: frozenset[str]) -> Middleware:
    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        name = _host_name(request.host)
        if not (_loopback(name) or name in allowed_hosts):
            raise web.HTTPMisdirectedRequest(
                text=f"this dashboard does not answer to {name!r}: see --allowed-host"
            )
        if request.method not in ("GET", "HEAD"):
            raise web.HTTPMethodNotAllowed(request.method, ["GET", "HEAD"])
        return await handler(request)

    return guard


async def _on_prepare(_: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(_HEADERS)


async def _healthy(_: web.Request) -> web.Response:
    """Serving: what the in-cluster install's startup probe asks."""
    return web.Response(text="ok")


async def _no_icon(_: web.Request) -> web.Response:
    """No icon, said without an error that a browser's console would show."""
    return web.Response(status=204)


def dashboard_app(view: ClusterView, *, allowed_hosts: Iterable[str] = ()) -> web.Application:
    """The pages; the caller runs `view` (`serve` does)."""
    app = web.Application(middlewares=[_guard(frozenset(allowed_hosts))])
    app[pages.VIEW_KEY] = view
    app.on_response_prepare.append(_on_prepare)
    app.router.add_get("/", pages.overview)
    app.router.add_get("/live", pages.overview_live)
    app.router.add_get("/jobs/{kind}/{namespace}/{name}", pages.job_page)
    app.router.add_get("/jobs/{kind}/{namespace}/{name}/live", pages.job_live)
    app.router.add_get("/jobs/{kind}/{namespace}/{name}/log", pages.job_log)
    app.router.add_get("/healthz", _healthy)
    app.router.add_get("/favicon.ico", _no_icon)
    app.router.add_static("/static", STATIC, append_version=False)
    return app


@contextlib.asynccontextmanager
async def serve(
    view: ClusterView,
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    allowed_hosts: Iterable[str] = (),
) -> AsyncIterator[str]:
    """Run the view's watches and serve the pages on `host:port` (0: a free port); yields the
    address to open."""
    runner = web.AppRunner(
        dashboard_app(view, allowed_hosts=allowed_hosts), access_log=None, shutdown_timeout=0.25
    )
    await runner.setup()
    watching = asyncio.create_task(view.run())
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0]
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        yield f"http://{shown}:{bound[1]}/"
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        await runner.cleanup()
