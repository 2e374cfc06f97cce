"""A wide job with a large template costs the controller what it changes, not workers x template:
`jobcore run` against a real API server, its memory read from /proc while the job runs."""

from __future__ import annotations

import pytest

from jobcore import Client
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import SimulatedNode
from jobcore.testing import create_until_phase
from tests.integration.runtime.test_cache_memory import ready_controller
from tests.integration.runtime.test_cache_memory import rss_mb
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration

WORKERS = 200
ENV_ENTRIES = 2_000
"""About 66 KB of spec: every worker pod carries it."""
PEAK_GROWTH_LIMIT_MB = 100.0


@pytest.mark.timeout(420)  # its own waits: 120 s for the warm-up job, 240 s for the wide one
async def test_a_wide_job_with_a_large_template_does_not_grow_the_controller_by_its_size(
    client: Client, namespace: str, kubeconfig_path: str, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=1.0)
    async with ready_controller(client, kubeconfig_path, namespace) as pid:
        # A first job warms the controller's code paths up, so what grows after is the wide job.
        await create_until_phase(
            client, MPIJOBS, mpijob(namespace, "warm-up"), "Succeeded", timeout=120
        )
        before = rss_mb(pid)
        wide = mpijob(namespace, "wide", replicas=WORKERS)
        container = wide["spec"]["worker"]["template"]["spec"]["containers"][0]
        container["env"] = [{"name": f"E{i:04d}", "value": f"{i:06d}"} for i in range(ENV_ENTRIES)]

        status = await create_until_phase(client, MPIJOBS, wide, "Succeeded", timeout=240)

        growth = rss_mb(pid, "VmHWM") - before
    print(f"{WORKERS} workers x {ENV_ENTRIES} env entries: peak RSS grew by {growth:.1f} MB")
    assert status["aggregate"]["succeeded"] >= 1
    assert growth < PEAK_GROWTH_LIMIT_MB, f"the controller's peak RSS grew by {growth:.1f} MB"
