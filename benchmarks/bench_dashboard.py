"""The dashboard at a cluster's size: `jobcore dashboard` over 1,000 MPIJobs and 10,000 pods.

The real API server holds `--jobs` MPIJobs (each with a Running status) in ten namespaces and
`--pods-per-job` pods of each, labelled as jobcore labels them; no controller runs, so nothing
but the benchmark writes. `jobcore dashboard` runs as its own process. Printed: its RSS once
its watches have synced and at its peak; the overview's HTTP answer (median of 5, and its
size); in Debian's headless Chromium, when present, the overview's first contentful paint and,
`--updates` times, the time from a job's status write to its row showing the new phase (the
live path: watch, server-sent event, htmx swap); without Chromium, the same to the event
arriving at an HTTP client.

Run: python -m benchmarks.bench_dashboard [--jobs 1000] [--pods-per-job 10] [--updates 7]
"""

from __future__ import annotations

import asyncio
import functools
import re
import statistics
import time
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

import aiohttp

from benchmarks._common import machine
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from benchmarks._common import status_mb
from benchmarks._dashboard import browser_or_none
from benchmarks._dashboard import start_dashboard
from jobcore import NAMESPACES
from jobcore import PODS
from jobcore import Client
from jobcore import Object
from jobcore.jobs import JOB_KIND_LABEL
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_INDEX_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import crd_for
from jobcore.testing import ControlPlane
from jobcore.testing import eventually
from jobcore.testing import install_crd
from jobcore.testing import job_manifest
from jobkinds.mpijob import MPIJobKind
from tests.support.dashboards import events_of
from tests.support.dashboards import live_stream
from tests.support.dashboards import until

KIND = MPIJobKind()
NAMESPACES_USED = 10
CONCURRENCY = 64
SPEC = {
    "worker": {
        "replicas": 9,
        "cmd": ["./train"],
        "template": {"spec": {"containers": [{"name": "mpi-worker", "image": "mpi:latest"}]}},
    }
}


def _status(phase: str, pods: int) -> Object:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    message = "All pods are running." if phase == "Running" else "The launcher exited with 1."
    return {
        "phase": phase,
        "ready": f"{pods if phase == 'Running' else 0}/{pods}",
        "conditions": [
            {
                "type": "Running",
                "status": "True",
                "reason": phase,
                "message": message,
                "lastTransitionTime": now,
            },
        ],
    }


def _pod(namespace: str, job: str, index: int) -> Object:
    replica = ("launcher", 0) if index == 0 else ("worker", index - 1)
    name = f"{job}-launcher" if index == 0 else f"{job}-worker-{index - 1}"
    labels = {
        JOB_NAME_LABEL: job,
        JOB_KIND_LABEL: KIND.resource.kind,
        REPLICA_TYPE_LABEL: replica[0],
        REPLICA_INDEX_LABEL: str(replica[1]),
    }
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "mpi-worker", "image": "mpi:latest"}]},
    }


async def _all(calls: list[Callable[[], Awaitable[Any]]]) -> float:
    """Run `calls`, CONCURRENCY at a time; the seconds it took."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(call: Callable[[], Awaitable[Any]]) -> None:
        async with gate:
            await call()

    started = time.monotonic()
    await asyncio.gather(*(one(call) for call in calls))
    return time.monotonic() - started


async def _fill(client: Client, jobs: int, pods_per_job: int) -> list[tuple[str, str]]:
    names = [(f"team-{i % NAMESPACES_USED}", f"job-{i}") for i in range(jobs)]
    for i in range(NAMESPACES_USED):
        await client.create(NAMESPACES, {"metadata": {"name": f"team-{i}"}})

    async def job(namespace: str, name: str) -> None:
        created = await client.create(
            KIND.resource, job_manifest(KIND, SPEC, name=name, namespace=namespace, uid=None)
        )
        created["status"] = _status("Running", pods_per_job)
        await client.update_status(KIND.resource, created)

    took = await _all([functools.partial(job, *n) for n in names])
    print(f"{jobs} jobs written in {took:.1f} s")
    pods = [(ns, name, i) for ns, name in names for i in range(pods_per_job)]
    took = await _all([functools.partial(client.create, PODS, _pod(*p), p[0]) for p in pods])
    print(f"{len(pods)} pods written in {took:.1f} s")
    return names


async def _overview_ms(url: str) -> tuple[float, int]:
    timings, size = [], 0
    async with aiohttp.ClientSession() as http:
        for _ in range(5):
            started = time.monotonic()
            async with http.get(url) as response:
                size = len(await response.read())
            timings.append(time.monotonic() - started)
    return statistics.median(timings) * 1000, size


async def _fail(client: Client, namespace: str, name: str, pods: int) -> float:
    """Write the job's phase Failed; when (monotonic) the write returned."""
    obj = await client.get(KIND.resource, name, namespace)
    obj["status"] = _status("Failed", pods)
    await client.update_status(KIND.resource, obj)
    return time.monotonic()


async def _updates_over_http(
    client: Client, url: str, names: list[tuple[str, str]], pods: int
) -> list[float]:
    """The time from each status write to its row arriving on the overview's live stream."""
    delays = []
    async with aiohttp.ClientSession() as http:
        page = await (await http.get(url)).text()
        async with http.get(url.rstrip("/") + live_stream(page)) as stream:
            events = events_of(stream)
            for namespace, name in names:
                written = await _fail(client, namespace, name, pods)
                await until(events, f'/{re.escape(name)}".*phase Failed">Failed<')
                delays.append(time.monotonic() - written)
    return delays


def _row_phase(browser: Any, namespace: str, name: str) -> str:
    script = (
        "const row = document.querySelector(arguments[0]);"
        "return row ? row.querySelector('td.phase').textContent : '';"
    )
    result: str = browser.execute_script(script, f'tr[data-job="mpijob/{namespace}/{name}"]')
    return result


async def _in_browser(
    browser: Any, client: Client, url: str, names: list[tuple[str, str]], pods: int
) -> tuple[float, list[float]]:
    """First contentful paint of the overview (ms), and each status write -> row updated (s)."""
    await asyncio.to_thread(browser.get, url)
    paint: float = await asyncio.to_thread(
        browser.execute_script,
        "return performance.getEntriesByName('first-contentful-paint')[0].startTime;",
    )
    await asyncio.sleep(1)  # the live stream connects
    delays = []
    for namespace, name in names:
        written = await _fail(client, namespace, name, pods)

        async def shown(namespace: str = namespace, name: str = name) -> bool:
            return await asyncio.to_thread(_row_phase, browser, namespace, name) == "Failed"

        await eventually(shown, timeout=30, interval=0.005)
        delays.append(time.monotonic() - written)
    print("status write -> row updated in Chromium, each (ms):", [round(d * 1000) for d in delays])
    return paint, delays


async def main(jobs: int, pods_per_job: int, updates: int) -> None:
    print(machine())
    async with ControlPlane() as plane:
        client = await Client.from_kubeconfig(plane.kubeconfig_path)
        await install_crd(client, crd_for(KIND))
        names = await _fill(client, jobs, pods_per_job)
        async with start_dashboard(plane.kubeconfig_path, jobs) as (url, pid):
            synced_rss = status_mb(pid, "VmRSS:")
            overview_ms, size = await _overview_ms(url)
            browser = browser_or_none()
            changed = names[:updates]
            if browser is not None:
                try:
                    paint, delays = await _in_browser(browser, client, url, changed, pods_per_job)
                finally:
                    browser.quit()
                how = "in Chromium"
            else:
                paint, how = float("nan"), "to an HTTP client (no Chromium)"
                delays = await _updates_over_http(client, url, changed, pods_per_job)
            peak_rss = status_mb(pid, "VmHWM:")
        await client.close()
    print_table(
        [
            (
                f"dashboard RSS once synced ({jobs} jobs, {jobs * pods_per_job} pods)",
                f"{synced_rss:.0f} MB",
                "< 256 MB",
            ),
            ("dashboard peak RSS", f"{peak_rss:.0f} MB", "< 256 MB"),
            ("overview HTML answer, median of 5", f"{overview_ms:.0f} ms", "< 500 ms"),
            ("overview HTML size", f"{size / 1024:.0f} KB"),
            ("overview first contentful paint in Chromium", f"{paint:.0f} ms", "< 1,500 ms"),
            (
                f"status write -> row updated {how}, median",
                f"{statistics.median(delays) * 1000:.0f} ms",
                "< 1,000 ms",
            ),
            (f"status write -> row updated {how}, max", f"{max(delays) * 1000:.0f} ms"),
        ]
    )


if __name__ == "__main__":
    run_benchmark(
        main,
        __doc__ or "",
        jobs=(int, 1000, "MPIJobs"),
        pods_per_job=(int, 10, "pods of each job"),
        updates=(int, 7, "status changes timed"),
    )
