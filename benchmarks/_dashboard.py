"""`jobcore dashboard` as a process for the benchmarks, and Chromium to look at it."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from tests.browser.chromium import chromium_missing
from tests.browser.chromium import start_chromium


@contextlib.asynccontextmanager
async def start_dashboard(kubeconfig: str, jobs: int) -> AsyncIterator[tuple[str, int]]:
    """`jobcore dashboard` for the MPIJobs on a free port, once its overview lists `jobs`
    jobs: its address and process id."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "controllers.cli",
        "dashboard",
        "--kubeconfig",
        kubeconfig,
        "--port",
        "0",
        "--kinds",
        "mpijob",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        url = ""
        while not url:
            line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
            if not line:
                raise RuntimeError("jobcore dashboard ended before it served")
            if line.startswith("jobcore dashboard: "):
                url = line.split(": ", 1)[1].strip()
        async with aiohttp.ClientSession() as http:
            while True:
                page = await (await http.get(url)).text()
                if page.count('<tr id="job-') >= jobs:
                    break
                await asyncio.sleep(0.5)
        yield url, process.pid
    finally:
        process.terminate()
        await process.wait()


def browser_or_none() -> Any:
    """Debian's headless Chromium, or None (saying why) where it is not installed."""
    if (missing := chromium_missing()) is not None:
        print(f"no browser figures: {missing}")
        return None
    return start_chromium()
