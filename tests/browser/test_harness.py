"""The browser harness, and the dashboard's bundle in it: a page served with a strict CSP loads
the bundle without a console error, shows ages, takes htmx SSE swaps and follows its log pane."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import pytest
from aiohttp import web
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By

import controllers
from jobcore._jobs.status import stamp
from tests.browser import console_errors
from tests.browser import drive
from tests.browser import save_screenshot
from tests.browser import wait_for

STATIC = Path(controllers.__file__).parent / "dashboard" / "static"
CSP = "default-src 'self'"
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>harness</title>
<link rel="stylesheet" href="/static/dashboard.css">
<script src="/static/dashboard.js" defer></script></head>
<body>
<p>Started <time id="started" data-since="{started}">then</time> ago.</p>
<div hx-ext="sse" sse-connect="/events">
  <div id="status" sse-swap="status">waiting</div>
  <pre id="log" class="log" data-follow sse-swap="log" hx-swap="beforeend">{lines}</pre>
</div>
</body></html>
"""
AT_END = "const p = arguments[0]; return p.scrollHeight - p.scrollTop - p.clientHeight <= 4;"
# Scrolls the pane to its top as a reader would, returning once its scroll event has fired.
SCROLL_UP = """const [pane, done] = arguments;
pane.addEventListener("scroll", () => done(), {once: true});
pane.scrollTop = 0;"""


@dataclass
class Page:
    """The test's page, its address, and the SSE stream's outbox: (event, HTML) to send."""

    url: str
    outbox: asyncio.Queue[tuple[str, str]] = field(default_factory=asyncio.Queue)
    connected: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, event: str, html: str) -> None:
        try:
            await asyncio.wait_for(self.connected.wait(), 10)
        except TimeoutError:
            raise AssertionError("the page opened no event stream within 10 s") from None
        await self.outbox.put((event, html))


def ago(seconds: float) -> str:
    return stamp(time.time() - seconds)


@pytest.fixture
async def page() -> AsyncIterator[Page]:
    """The page above and the dashboard's static files, served with CSP on every response."""
    lines = "".join(f"line {n}\n" for n in range(1, 101))
    html = PAGE.format(started=ago(125), lines=lines)

    async def index(_: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html")

    async def events(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        served.connected.set()
        while True:
            event, fragment = await served.outbox.get()
            data = "".join(f"data: {line}\n" for line in fragment.split("\n"))
            await response.write(f"event: {event}\n{data}\n".encode())

    async def no_icon(_: web.Request) -> web.Response:
        return web.Response(status=204)  # else the browser's request for it logs a 404

    async def csp(_: web.Request, response: web.StreamResponse) -> None:
        response.headers["Content-Security-Policy"] = CSP

    app = web.Application()
    app.on_response_prepare.append(csp)
    app.router.add_get("/", index)
    app.router.add_get("/events", events)
    app.router.add_get("/favicon.ico", no_icon)
    app.router.add_static("/static", STATIC)
    # The event stream's handler waits on the outbox to the end: stop it after half a second.
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    served = Page(url=f"http://127.0.0.1:{runner.addresses[0][1]}/")
    try:
        yield served
    finally:
        await runner.cleanup()


async def test_the_bundle_runs_under_a_strict_csp_and_takes_live_swaps(
    browser: Chrome, page: Page, tmp_path: Path
) -> None:
    await drive(browser.get, page.url)
    # Within 3 s, so before the 5 s refresh: ages show on load and on each swap.
    await drive(wait_for, browser, "#started", text="2m", timeout=3)
    log = await drive(browser.find_element, By.ID, "log")
    assert await drive(browser.execute_script, AT_END, log), "the log pane opens at its end"

    await page.send(
        "status",
        f'<span class="phase Running">Running</span> for '
        f'<time id="for" data-since="{ago(3 * 3600 + 5)}">a while</time>',
    )
    await drive(wait_for, browser, "#status #for", text="3h", timeout=3)

    await page.send("log", "line 101\nline 102\n")
    await drive(wait_for, browser, "#log", text="line 102")
    assert await drive(browser.execute_script, AT_END, log), "new lines keep it at its end"

    await drive(browser.execute_async_script, SCROLL_UP, log)
    await page.send("log", "line 103\n")
    await drive(wait_for, browser, "#log", text="line 103")
    assert await drive(browser.execute_script, "return arguments[0].scrollTop;", log) == 0, (
        "a reader who scrolled up stays where they are"
    )

    assert await drive(console_errors, browser) == []
    shot = await drive(save_screenshot, browser, tmp_path / "shots" / "harness.png")
    assert shot.read_bytes().startswith(b"\x89PNG")
    await drive(browser.get, "about:blank")  # closes the event stream before the server stops
