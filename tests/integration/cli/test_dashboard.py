"""`jobcore dashboard` over HTTP: its pages and live streams against the real API server, the
real controller and the simulated node (tests/browser/ drives the same pages in Chromium)."""

from __future__ import annotations

import re
from typing import Any

import aiohttp
import pytest

from jobcore import EVENTS
from jobcore import Client
from jobcore.testing import SimulatedNode
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import wait_for_phase
from jobkinds.mpijob import MPIJobKind
from tests.support import mpijobs
from tests.support.dashboards import events_of
from tests.support.dashboards import live_stream
from tests.support.dashboards import mpijob_dashboard
from tests.support.dashboards import until

pytestmark = pytest.mark.integration

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


async def test_the_overview_follows_a_job_live_and_its_page_leads_with_the_failed_rank(
    client: Client, namespace: str, simulated_node: SimulatedNode
) -> None:
    async with (
        job_controller(client, MPIJobKind(), namespace=namespace),
        mpijob_dashboard(client, namespace) as url,
        aiohttp.ClientSession(url, timeout=aiohttp.ClientTimeout(total=30)) as http,
    ):
        async with http.get("/") as response:
            page = await response.text()
            headers: Any = response.headers
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert "train" not in page
        async with http.get(live_stream(page)) as live:
            events = events_of(live)
            await client.create(mpijobs.MPIJOBS, mpijobs.mpijob(namespace, "train"))
            row = await until(events, r'data-job="mpijob/[^"]+/train".*phase[^"]*">Running<')
            assert "afterbegin:#jobs-body" in row or 'hx-swap-oob="true"' in row
            await client.create(
                EVENTS,
                {
                    "metadata": {"generateName": "hostile-"},
                    "involvedObject": {"kind": "MPIJob", "namespace": namespace, "name": "train"},
                    "reason": "Hostile",
                    "message": HOSTILE,
                    "type": "Warning",
                },
                namespace,
            )
            await simulated_node.fail(namespace, "train-launcher", exit_code=3)
            await wait_for_phase(client, mpijobs.MPIJOBS, namespace, "train", "Failed")
            await until(events, r'data-job="mpijob/[^"]+/train".*phase[^"]*">Failed<')

        async def hostile_event_shown() -> bool:
            async with http.get(f"/jobs/mpijob/{namespace}/train") as response:
                return "Hostile" in await response.text()

        await eventually(hostile_event_shown, timeout=10)
        async with http.get(f"/jobs/mpijob/{namespace}/train") as response:
            job_page = await response.text()
        failure = re.search(r'<section id="failure"[^>]*>(.*?)</section>', job_page, re.S)
        assert failure, job_page
        assert '<dd class="pod">train-launcher</dd>' in failure.group(1)
        assert '<dd class="rank">launcher-0</dd>' in failure.group(1)
        assert '<dd class="exit-code">3</dd>' in failure.group(1)
        print(f"the failed job's page leads with: {' '.join(failure.group(1).split())}")
        assert HOSTILE not in job_page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in job_page
        assert "kind: MPIJob" in job_page  # as stored
        assert "kind: Pod" in job_page  # what jobcore render would create

        async with http.get("/", headers={"Host": "rebound.example:8080"}) as response:
            assert response.status == 421
        async with http.post("/") as response:
            assert response.status == 405

        async with http.get("/") as response:
            page = await response.text()
        old = re.search(r'<tr id="job-([^"]+)"', page)
        assert old, page
        async with http.get(live_stream(page)) as live:
            events = events_of(live)
            await client.delete(mpijobs.MPIJOBS, "train", namespace)
            await until(events, f'<tr id="job-{old.group(1)}" hx-swap-oob="delete">')
            await client.create(mpijobs.MPIJOBS, mpijobs.mpijob(namespace, "train"))
            again = await until(events, r'afterbegin:#jobs-body"><tr id="job-')
            assert old.group(1) not in again, "a new job of the old one's name gets a new row"
