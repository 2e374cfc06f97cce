"""Regenerate the screenshots in docs/dashboard.md: `python -m tests.browser.screenshots`.

A real control plane, the MPIJob and HorovodJob controllers and a simulated node run four jobs
(one running, one succeeded, one whose worker exits 3, one HorovodJob running) while
`jobcore dashboard` serves them; Debian's headless Chromium photographs the overview and the
failed job's page into docs/images/.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
from pathlib import Path
from typing import Any

from controllers.dashboard.server import serve
from controllers.dashboard.view import ClusterView
from controllers.kinds import installed_kinds
from jobcore import NAMESPACES
from jobcore import Client
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import ControlPlane
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import job_controller
from jobcore.testing import wait_for_phase
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.mpijob import MPIJobKind
from tests.browser import drive
from tests.browser import save_screenshot
from tests.browser import wait_for
from tests.browser.chromium import chromium_missing
from tests.browser.chromium import start_chromium
from tests.support.kindjobs import HOROVODJOB
from tests.support.kindjobs import MPIJOB

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
TEAM = "vision"
TRAINING_LOG = "".join(f"epoch {n}: loss {2.0 / n:.3f}\n" for n in range(1, 9))


async def _jobs(client: Client, node: SimulatedNode) -> None:
    mpijobs, horovodjobs = MPIJOB.resource, HOROVODJOB.resource
    await client.create(mpijobs, MPIJOB.job(TEAM, "resnet-done", replicas=2))
    await client.create(mpijobs, MPIJOB.job(TEAM, "resnet-exit3", replicas=4))
    await client.create(mpijobs, MPIJOB.job(TEAM, "bert-train", replicas=3))
    await client.create(horovodjobs, HOROVODJOB.job(TEAM, "gpt-horovod", replicas=2))
    for name in ("resnet-done", "resnet-exit3", "bert-train"):
        await wait_for_phase(client, mpijobs, TEAM, name, "Running")
        node.write_log(TEAM, f"{name}-launcher", MPIJOB.launcher, TRAINING_LOG)
    await node.fail(TEAM, "resnet-exit3-worker-2", exit_code=3)
    await node.succeed(TEAM, "resnet-done-launcher")
    await wait_for_phase(client, mpijobs, TEAM, "resnet-exit3", "Failed")
    await wait_for_phase(client, mpijobs, TEAM, "resnet-done", "Succeeded")


async def take(output: Path) -> list[Path]:
    if (missing := chromium_missing()) is not None:
        raise SystemExit(missing)
    async with (
        ControlPlane() as plane,
        await Client.from_kubeconfig(plane.kubeconfig_path) as client,
    ):
        await client.create(NAMESPACES, {"metadata": {"name": TEAM}})
        node = SimulatedNode(client, ready_after=0.5)
        node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=3600)
        kinds = [k for k in installed_kinds() if k.name in ("mpijob", "horovodjob")]
        async with contextlib.AsyncExitStack() as running:
            await running.enter_async_context(background(node.run()))
            for kind in (MPIJobKind(), HorovodJobKind()):
                await running.enter_async_context(job_controller(client, kind, namespace=None))
            url = await running.enter_async_context(serve(ClusterView(client, kinds), port=0))
            await _jobs(client, node)
            with tempfile.TemporaryDirectory() as profile:
                browser = start_chromium(Path(profile))
                try:
                    shots = [
                        await _shot(browser, url, "tr.job", output / "dashboard-overview.png"),
                        await _shot(
                            browser,
                            f"{url}jobs/mpijob/{TEAM}/resnet-exit3",
                            "#failure",
                            output / "dashboard-failed-job.png",
                            height=2000,
                        ),
                    ]
                finally:
                    browser.quit()
    return shots


async def _shot(browser: Any, url: str, ready: str, path: Path, height: int = 900) -> Path:
    await drive(browser.set_window_size, 1400, height)
    await drive(browser.get, url)
    await drive(wait_for, browser, ready)
    await asyncio.sleep(0.5)  # ages and the log pane fill in
    return await drive(save_screenshot, browser, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--output", type=Path, default=DOCS_IMAGES)
    for path in asyncio.run(take(parser.parse_args().output)):
        print(path)


if __name__ == "__main__":
    main()
