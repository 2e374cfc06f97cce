"""The local sandbox: a real control plane, a simulated node, the controller and a sample job."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any, TextIO

from controllers.demo import CRD, DEMOJOBS, add_demo_controller
from jobcore import CUSTOM_RESOURCE_DEFINITIONS, PODS, Client, Manager, NotFoundError, Object
from jobcore.testing import ControlPlane, SimulatedNode

SAMPLE_JOB: Object = {
    "apiVersion": DEMOJOBS.api_version,
    "kind": DEMOJOBS.kind,
    "metadata": {"name": "demo", "namespace": "default"},
    "spec": {"replicas": 3, "image": "busybox", "command": ["sh", "-c", "echo hello"]},
}


async def install_crd(client: Client, crd: Object) -> None:
    """Create the CRD and wait until the API server serves it."""
    with contextlib.suppress(Exception):
        await client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    for _ in range(100):
        current = await client.get(CUSTOM_RESOURCE_DEFINITIONS, crd["metadata"]["name"])
        conditions = current.get("status", {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"CRD {crd['metadata']['name']} was not established")


def _show(job: Object, pods: list[Object], started: float, out: TextIO) -> None:
    status = job.get("status") or {}
    pod_phases = " ".join(
        f"{p['metadata']['name']}={p.get('status', {}).get('phase', 'Creating')}" for p in pods
    )
    out.write(
        f"[{time.monotonic() - started:5.1f}s] {job['metadata']['name']}: "
        f"phase={status.get('phase', '-')} pods: {pod_phases or '-'}\n"
    )
    out.flush()


async def run_sandbox(
    *, keep: bool = False, run_seconds: float = 3.0, out: TextIO = sys.stdout
) -> str:
    """Run the sample job to its end, showing its status live; return its final phase."""
    async with ControlPlane() as plane:
        out.write(f"control plane up: {plane.url}\nkubeconfig: {plane.kubeconfig_path}\n")
        client = await Client.from_kubeconfig(plane.kubeconfig_path)
        tasks: list[asyncio.Task[Any]] = []
        try:
            await install_crd(client, CRD)
            node = SimulatedNode(client, ready_after=0.5)
            node.when(lambda pod: True, exit_code=0, after=run_seconds)
            manager = Manager(client, metrics_address=("127.0.0.1", 0), health_address=None)
            add_demo_controller(manager)
            tasks = [asyncio.create_task(node.run()), asyncio.create_task(manager.run())]
            await client.create(DEMOJOBS, SAMPLE_JOB)
            started, phase = time.monotonic(), ""
            while phase not in ("Succeeded", "Failed") or keep:
                await asyncio.sleep(0.5)
                try:
                    job = await client.get(DEMOJOBS, "demo", "default")
                except NotFoundError:
                    break
                pods = (await client.list(PODS, "default"))["items"]
                _show(job, pods, started, out)
                phase = job.get("status", {}).get("phase", "")
            return phase
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.close()
