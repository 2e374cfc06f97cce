"""The dashboard as a person uses it, in Debian's headless Chromium: the real API server, the
real controller and the simulated node behind `jobcore dashboard`'s pages.

The canary puts other tenants' text where the pages show it (status messages, a container's
termination message, Event reasons and notes, log lines, the filters' query) as markup that
would run, load or add elements if it ever reached the page as HTML, then counts what ran.
Names and label values cannot carry markup: the API server allows only DNS characters there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from jobcore import EVENTS
from jobcore import PODS
from jobcore import Client
from jobcore.jobs import crd_for
from jobcore.testing import SimulatedNode
from jobcore.testing import install_crd
from jobcore.testing import job_controller
from jobcore.testing import wait_for_phase
from jobkinds.mpijob import MPIJobKind
from tests.browser import console_errors
from tests.browser import drive
from tests.browser import wait_for
from tests.support import mpijobs
from tests.support.dashboards import mpijob_dashboard

pytestmark = pytest.mark.integration

BUMP = "window.canary=(window.canary||0)+1"
PAYLOADS = (
    f"<script>{BUMP}</script>",
    f'<img src="/canary.png" onerror="{BUMP}">',
    f'"><svg onload="{BUMP}"></svg>',
    f'</pre></textarea><iframe srcdoc="<script>parent.{BUMP}</script>"></iframe>',
    f'<div hx-get="/canary" hx-trigger="load" hx-on:htmx:load="{BUMP}">htmx</div>',
    f'<a href="javascript:{BUMP}">link</a>{{{{7*7}}}}',
)
HOSTILE = "".join(PAYLOADS)
INJECTED = (
    "script:not([src='/static/dashboard.js']), img, iframe, svg[onload], [onerror], [hx-get],"
    " [hx-trigger], a[href^='javascript']"
)
COUNT = f'return [window.canary || 0, document.querySelectorAll("{INJECTED}").length];'


@pytest.fixture
async def dashboard(client: Client, namespace: str) -> AsyncIterator[str]:
    """`jobcore dashboard`'s pages over the MPIJobs of the test's namespace."""
    await install_crd(client, crd_for(MPIJobKind()))
    async with mpijob_dashboard(client, namespace) as url:
        yield url


async def test_the_overview_shows_a_new_job_live_and_the_failed_ranks_page_says_what_failed(
    browser: WebDriver,
    client: Client,
    namespace: str,
    simulated_node: SimulatedNode,
    dashboard: str,
) -> None:
    row = f'tr[data-job="mpijob/{namespace}/train"]'
    async with job_controller(client, MPIJobKind(), namespace=namespace):
        await drive(browser.get, dashboard)
        await drive(wait_for, browser, "table#jobs")
        await client.create(mpijobs.MPIJOBS, mpijobs.mpijob(namespace, "train"))
        await drive(wait_for, browser, f"{row} td.phase", text="Running", timeout=15)
        await simulated_node.fail(namespace, "train-worker-1", exit_code=3)
        await wait_for_phase(client, mpijobs.MPIJOBS, namespace, "train", "Failed")
        await drive(wait_for, browser, f"{row} td.phase", text="Failed", timeout=15)
        assert await drive(console_errors, browser) == []

        simulated_node.write_log(namespace, "train-launcher", "mpi-launcher", "epoch 1\n")
        await drive(browser.get, f"{dashboard}jobs/mpijob/{namespace}/train")
        await drive(wait_for, browser, "pre.log", text="epoch 1")
        simulated_node.write_log(namespace, "train-launcher", "mpi-launcher", "epoch 2\n")
        await drive(wait_for, browser, "pre.log", text="epoch 2")  # followed live
        for part, text in (
            ("#failure .pod", "train-worker-1"),
            ("#failure .rank", "worker-1"),
            ("#failure .exit-code", "3"),
            ("#failure .message", "A worker stopped before the launcher finished."),
            ('tr[data-pod="train-worker-1"] td.exit-codes', "mpi-worker: 3"),
        ):
            await drive(wait_for, browser, part, text=text)
        assert await drive(console_errors, browser) == []
        await drive(browser.get, "about:blank")  # closes the live streams


async def _hostile_job(client: Client, namespace: str) -> None:
    """A job no controller serves, whose status, pod, Events and log hold the payloads."""
    job = await client.create(mpijobs.MPIJOBS, mpijobs.mpijob(namespace, "canary"))
    job["status"] = {
        "phase": "Failed",
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "Hostile",
                "message": HOSTILE,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    await client.update_status(mpijobs.MPIJOBS, job)
    labels = {
        "jobcore.dev/job-name": "canary",
        "jobcore.dev/job-kind": "MPIJob",
        "jobcore.dev/replica-type": "launcher",
        "jobcore.dev/replica-index": "0",
    }
    pod = await client.create(
        PODS,
        {
            "metadata": {"name": "canary-launcher", "labels": labels},
            "spec": {"containers": [{"name": "mpi-launcher", "image": "mpi"}]},
        },
        namespace,
    )
    ended = {
        "terminated": {
            "exitCode": 3,
            "reason": HOSTILE[:100],
            "message": HOSTILE,
            "startedAt": "2026-01-01T00:00:00Z",
            "finishedAt": "2026-01-01T00:00:05Z",
        }
    }
    pod["status"] = {
        "phase": "Failed",
        "message": HOSTILE,
        "containerStatuses": [
            {
                "name": "mpi-launcher",
                "ready": False,
                "restartCount": 0,
                "image": "mpi",
                "imageID": "",
                "state": ended,
            }
        ],
    }
    await client.update_status(PODS, pod)
    for payload in PAYLOADS:
        await client.create(
            EVENTS,
            {
                "metadata": {"generateName": "canary-"},
                "type": "Warning",
                "reason": payload[:100],
                "message": payload,
                "involvedObject": {"kind": "MPIJob", "namespace": namespace, "name": "canary"},
            },
            namespace,
        )


async def test_other_tenants_text_runs_nothing_in_the_browser(
    browser: WebDriver,
    client: Client,
    namespace: str,
    simulated_node: SimulatedNode,
    dashboard: str,
) -> None:
    await _hostile_job(client, namespace)
    simulated_node.write_log(namespace, "canary-launcher", "mpi-launcher", HOSTILE + "\n")
    pages: list[Any] = [
        dashboard,
        f"{dashboard}?namespace={quote(HOSTILE)}&phase={quote(HOSTILE)}",
        f"{dashboard}jobs/mpijob/{namespace}/canary",
    ]
    for page in pages:
        await drive(browser.get, page)
        await drive(wait_for, browser, "main")
    await drive(wait_for, browser, "#events", text="onerror")
    await drive(wait_for, browser, "#failure", text="<script>")
    await drive(wait_for, browser, "pre.log", text="<iframe")
    ran, injected = await drive(browser.execute_script, COUNT)
    print(
        f"XSS canary: {len(PAYLOADS)} payloads in 6 places, {ran} ran, {injected} elements injected"
    )
    assert (ran, injected) == (0, 0)
    await drive(browser.get, dashboard)
    await drive(
        wait_for, browser, f'tr[data-job="mpijob/{namespace}/canary"] td.message', text="<svg"
    )
    assert await drive(browser.execute_script, COUNT) == [0, 0]
    assert await drive(console_errors, browser) == []
    await drive(browser.get, "about:blank")
