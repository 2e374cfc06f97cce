"""The real cluster: set-up, the controller's pods, and the sample job on a real kubelet.

    python -m benchmarks.bench_realcluster [--rounds 3] [--cold 1]

Prints: `scripts/cluster.sh`'s set-up (warm: everything cached; with --cold, the images built
into an empty folder), the cluster's start by step, the controller's deployment (kubectl apply
-k to both replicas Ready, and each pod's start to Ready as its kubelet reports), the MPIJob
sample (Open MPI 4, 2 workers x 2 slots) from submit to Succeeded (median of --rounds), the
controller pods' memory (VmRSS of each replica's process, read on the host) and the take-down.
Needs root and `scripts/cluster.sh`'s set-up; it takes the machine's cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path

from benchmarks._common import machine
from benchmarks._common import median_index
from benchmarks._common import odd_count
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from benchmarks._common import status_mb
from controllers.manifests import CONTROLLER_SELECTOR
from controllers.manifests import NAMESPACE
from controllers.sandbox import clusterjobs
from controllers.sandbox import realjobs
from controllers.sandbox.cluster import deploy
from jobcore import CONFIGMAPS
from jobcore import Client
from jobcore.testing import RealCluster
from jobcore.testing import images_folder
from jobcore.testing import wait_for_end

ROOT = Path(__file__).resolve().parents[1]


def set_up(cold: bool) -> float:
    """Seconds `scripts/cluster.sh` takes (with `cold`, building every image afresh)."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="jobcore-cold-images-") as empty:
        if cold:
            env["JOBCORE_IMAGES"] = empty
        started = time.monotonic()
        subprocess.run(["bash", str(ROOT / "scripts" / "cluster.sh")], env=env, check=True)
        return time.monotonic() - started


def _time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def pod_start_to_ready(cluster: RealCluster) -> list[float]:
    """Each controller pod's start to its Ready condition, as its kubelet wrote them (1 s)."""
    answer = await cluster.commands.kubectl(
        "get", "pods", "-n", NAMESPACE, "-l", CONTROLLER_SELECTOR, "-o", "json"
    )
    seconds = []
    for pod in json.loads(answer.stdout)["items"]:
        ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
        seconds.append(_time(ready["lastTransitionTime"]) - _time(pod["status"]["startTime"]))
    return seconds


def controller_rss_mb() -> list[float]:
    """VmRSS of each `jobcore run --leader-elect` process on this host (the replicas)."""
    sizes = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"--leader-elect" in argv and any(a.endswith(b"jobcore") for a in argv[:2]):
                sizes.append(status_mb(int(proc.name), "VmRSS:"))
        except (OSError, ValueError):
            continue
    return sizes


async def sample_run(client: Client, namespace: str, round_: int) -> float:
    """Seconds from creating the MPIJob sample to its Succeeded."""
    programs = Path(tempfile.mkdtemp(prefix="jobcore-bench-"))
    sample = realjobs.sample(
        "mpijob", "openmpi", programs, namespace=namespace, installs=clusterjobs.installs()
    )
    name = f"bench-{round_}"
    sample.job["metadata"]["name"] = name
    job, configmap = clusterjobs.with_programs_configmap(sample.job, programs)
    await client.create(CONFIGMAPS, configmap)
    started = time.monotonic()
    await client.create(sample.resource, job)
    status = await wait_for_end(client, sample.resource, namespace, name, timeout=180)
    elapsed = time.monotonic() - started
    if status.get("phase") != "Succeeded":
        raise RuntimeError(f"{name} ended {status.get('phase')}: {status}")
    return elapsed


async def main(rounds: int, cold: bool) -> None:
    print(f"machine: {machine()}")
    setup = set_up(cold)
    cluster = RealCluster(images_folder())
    started = time.monotonic()
    await cluster.start(wait=1800)
    up = time.monotonic() - started
    rows = [(f"scripts/cluster.sh ({'cold images' if cold else 'warm'})", f"{setup:.1f} s")]
    rows += [
        (f"cluster start: {step}", f"{seconds:.1f} s") for step, seconds in cluster.timings.items()
    ]
    rows.append(("cluster start, in all", f"{up:.1f} s"))
    try:
        with tempfile.TemporaryDirectory() as scratch:
            manifests = Path(scratch) / "manifests"
            shutil.copytree(ROOT / "manifests", manifests)
            deployed = await deploy(cluster, manifests)
        rows.append(("kubectl apply -k to 2 replicas Ready", f"{deployed:.1f} s"))
        for index, seconds in enumerate(await pod_start_to_ready(cluster)):
            rows.append((f"controller pod {index} start to Ready (kubelet)", f"{seconds:.0f} s"))
        client = await Client.from_kubeconfig(cluster.kubeconfig_path)
        try:
            runs = [await sample_run(client, "default", n) for n in range(rounds)]
        finally:
            await client.close()
        median = runs[median_index(runs)]
        rows.append((f"MPIJob sample submit to Succeeded (median of {rounds})", f"{median:.1f} s"))
        for index, size in enumerate(controller_rss_mb()):
            rows.append((f"controller replica {index} VmRSS", f"{size:.0f} MB"))
    finally:
        started = time.monotonic()
        await cluster.stop()
        rows.append(("take-down", f"{time.monotonic() - started:.1f} s"))
    print_table(rows)


if __name__ == "__main__":
    run_benchmark(
        main,
        __doc__ or "",
        rounds=(odd_count, 3, "sample runs (odd: the median is one of them)"),
        cold=(lambda text: text.lower() in ("1", "true", "yes"), False, "build the images afresh"),
    )
