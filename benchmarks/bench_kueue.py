"""Measure what jobcore's Kueue integration costs: the API requests it adds per job, and the
time from a Workload's admission to the job's first pod.

The real API server, Kueue's API types and the testing kit's Kueue stand-in, a simulated node
that ends every launcher 0.2 s after it runs, and the MPIJob controller with `kueue=True`,
whose requests alone pass through a counting proxy. `--jobs` MPIJobs of 2 workers run without
Kueue's label, then as many with it, in a ClusterQueue whose quota admits them all at once.

Run: python -m benchmarks.bench_kueue [--jobs N]
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from benchmarks._common import machine
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from jobcore import NAMESPACES
from jobcore import PODS
from jobcore import Client
from jobcore import Informer
from jobcore import Object
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import KUEUE_WORKLOADS
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import ControlPlane
from jobcore.testing import FaultProxy
from jobcore.testing import KueueStandIn
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import create_cluster_queue
from jobcore.testing import create_flavor
from jobcore.testing import create_local_queue
from jobcore.testing import install_kueue_crds
from jobcore.testing import job_controller
from jobcore.testing import job_manifest
from jobcore.testing import wait_for_phases
from jobkinds.mpijob import MPIJobKind

NAMESPACE = "bench"
KIND = MPIJobKind()


class _FirstSeen:
    """When (monotonic) each job's Workload was first seen admitted, and its first pod."""

    def __init__(self) -> None:
        self.admitted: dict[str, float] = {}
        self.first_pod: dict[str, float] = {}

    def on_add(self, obj: Object) -> None:
        self.on_update(obj, obj)

    def on_update(self, old: Object, new: Object) -> None:
        now = time.monotonic()
        if new["kind"] == "Workload":
            conditions = (new.get("status") or {}).get("conditions") or ()
            if any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions):
                job = new["metadata"]["ownerReferences"][0]["name"]
                self.admitted.setdefault(job, now)
        else:
            job = (new["metadata"].get("labels") or {}).get(JOB_NAME_LABEL, "")
            self.first_pod.setdefault(job, now)

    def on_delete(self, obj: Object) -> None:
        pass


async def _run_jobs(
    client: Client, proxy: FaultProxy, names: list[str], labelled: bool
) -> tuple[int, int]:
    """Create the jobs, wait until all succeeded; the controller's requests and writes."""
    requests, writes = proxy.requests, len(proxy.writes)
    for name in names:
        job = job_manifest(KIND, {"worker": _WORKER}, name=name, namespace=NAMESPACE, uid=None)
        if labelled:
            job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
        await client.create(KIND.resource, job)
    await wait_for_phases(client, KIND.resource, NAMESPACE, names, "Succeeded", timeout=600)
    return proxy.requests - requests, len(proxy.writes) - writes


_CPU = {"requests": {"cpu": "1"}}
_WORKER = {
    "replicas": 2,
    "cmd": ["./train"],
    "template": {"spec": {"containers": [{"name": "mpi-worker", "image": "m", "resources": _CPU}]}},
}


async def _settled(proxy: FaultProxy) -> None:
    """Wait until the controller has sent nothing for a second (its last status writes)."""
    last = -1
    while proxy.requests != last:
        last = proxy.requests
        await asyncio.sleep(1.0)


async def main(jobs: int) -> None:
    print(f"machine: {machine()}; {jobs} MPIJobs of 2 workers each way")
    async with ControlPlane() as plane:
        admin = await Client.from_kubeconfig(plane.kubeconfig_path)
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        await admin.create(NAMESPACES, ns)
        await install_kueue_crds(admin)
        seen = _FirstSeen()
        watches = [Informer(admin, KUEUE_WORKLOADS, namespace=NAMESPACE)]
        watches.append(Informer(admin, PODS, namespace=NAMESPACE))
        for informer in watches:
            informer.add_handler(seen)
        node = SimulatedNode(admin, name="bench-node", namespace=NAMESPACE)
        node.when(f"{REPLICA_TYPE_LABEL}=launcher", exit_code=0, after=0.2)
        runs: list[Callable[[], Coroutine[Any, Any, None]]] = [
            KueueStandIn(admin).run,
            node.run,
            *(informer.run for informer in watches),
        ]
        async with FaultProxy(plane.url, plane.token) as proxy, contextlib.AsyncExitStack() as bg:
            with tempfile.TemporaryDirectory() as folder:
                config = proxy.kubeconfig(str(Path(folder) / "controller.kubeconfig"))
                controller = await Client.from_kubeconfig(config)
            for run in runs:
                await bg.enter_async_context(background(run()))
            await create_flavor(admin, "default")
            await create_cluster_queue(admin, "cq", {"default": str(3 * jobs)})
            await create_local_queue(admin, NAMESPACE, "team", "cq")
            async with job_controller(controller, KIND, namespace=NAMESPACE, kueue=True):
                plain = await _run_jobs(admin, proxy, [f"p{i}" for i in range(jobs)], False)
                await _settled(proxy)
                names = [f"q{i}" for i in range(jobs)]
                queued = await _run_jobs(admin, proxy, names, True)
                await _settled(proxy)
            await controller.close()
        await admin.close()
    delays = [seen.first_pod[n] - seen.admitted[n] for n in names]
    print_table(
        [
            ("requests per job, without Kueue's label", f"{plain[0] / jobs:.1f}"),
            ("requests per job, queued through Kueue", f"{queued[0] / jobs:.1f}"),
            ("writes per job, without / with", f"{plain[1] / jobs:.1f} / {queued[1] / jobs:.1f}"),
            ("admitted -> first pod, median", f"{statistics.median(delays) * 1000:.0f} ms"),
            ("admitted -> first pod, max", f"{max(delays) * 1000:.0f} ms"),
        ]
    )


if __name__ == "__main__":
    run_benchmark(main, __doc__ or "", jobs=(int, 20, "MPIJobs each way"))
