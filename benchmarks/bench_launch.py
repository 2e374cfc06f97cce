"""Launching MPI through jobcore's agent beside ssh, on the process node: time and memory.

    python -m benchmarks.bench_launch [--workers 2,16] [--rounds 3]

For each transport (ssh, agent) and each worker count, an MPIJob (Open MPI 4, one slot per
worker, one rank per worker) whose ranks print the wall-clock time they started, run to its
end on a process node (real processes, real network namespaces: sshd or `jobcore-agent serve`
in every worker). Prints, as medians of --rounds: submit to all ranks started; the launch's
overhead, from the launcher pod's creation (first seen by polling every 20 ms) to all ranks
started, which covers the launcher's start, its wait for the workers and mpirun's daemons
started through sshd or the agent; the agent's size; and each worker's server memory (VmRSS
of its sshd, or agent, once the job runs: the listener and the session serving the rank).
Target (issue 32): the agent no slower than ssh, under 5 MB RSS per worker. Needs root and
`scripts/frameworks.sh`'s Open MPI 4; builds the agent with `scripts/agent.sh`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import cluster
from benchmarks._common import machine
from benchmarks._common import median_index
from benchmarks._common import odd_count
from benchmarks._common import print_table
from benchmarks._common import run_benchmark
from benchmarks._common import status_mb
from controllers import realjobs
from jobcore import PODS
from jobcore import Client
from jobcore import NotFoundError
from jobcore.jobs import AgentSource
from jobcore.testing import ProcessNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import wait_for_end
from jobkinds.mpijob import MPIJobKind

ROOT = Path(__file__).resolve().parents[1]
KIND = MPIJobKind()
NAMESPACE = "bench"
RANK = ["/bin/sh", "-c", "echo rank-started $(date +%s.%N); sleep 2"]
"""Each rank: its start time, then 2 s alive, so the servers' memory is read mid-session."""


def agent_source() -> tuple[AgentSource, int]:
    """The agent `scripts/agent.sh` builds, and its size in bytes."""
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "agent.sh")], capture_output=True, text=True, check=True
    )
    path = built.stdout.strip().splitlines()[-1]
    return AgentSource(image="jobcore:bench", path=path), os.path.getsize(path)


def job(transport: str, workers: int, name: str, folder: Path) -> dict[str, Any]:
    manifest = realjobs.mpi_job(
        "openmpi", folder, RANK, name=name, namespace=NAMESPACE, workers=workers, slots=1
    )
    if transport == "agent":
        manifest["spec"]["transport"] = "agent"
        del manifest["spec"]["ssh"]
    return manifest


def server_rss_mb(transport: str, pods: list[dict[str, Any]]) -> float:
    """VmRSS of the server processes of `transport` (sshd's listener and its sessions, or the
    agent) in the network namespaces of `pods`, the job's workers."""
    namespaces = set()
    for pod in pods:
        with contextlib.suppress(OSError):
            uid = pod["metadata"]["uid"].replace("-", "")[:8]
            namespaces.add(os.stat(f"/run/netns/jc-{uid}").st_ino)
    total = 0.0
    for proc in Path("/proc").iterdir():
        try:
            if os.stat(proc / "ns" / "net").st_ino not in namespaces:
                continue
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            serving = argv[0].endswith(b"jobcore-agent") and b"serve" in argv
            if serving if transport == "agent" else argv[0].split(b" ")[0].endswith(b"sshd:"):
                total += status_mb(int(proc.name), "VmRSS:")
        except (OSError, ValueError):
            continue
    return total


async def one_run(
    client: Client, node: ProcessNode, transport: str, workers: int, name: str
) -> tuple[float, float, float]:
    """Submit to all ranks started, launcher to all ranks started started (s), and the
    workers' server memory per worker (MB) while the ranks run."""
    folder = Path(tempfile.mkdtemp(prefix="jobcore-bench-launch-"))
    os.chmod(folder, 0o755)
    submitted = time.time()
    await client.create(KIND.resource, job(transport, workers, name, folder))
    launcher = f"{name}-launcher"
    while True:
        try:
            await client.get(PODS, launcher, NAMESPACE)
            break
        except NotFoundError:
            await asyncio.sleep(0.02)
    created = time.time()

    def ranks_started() -> bool:
        try:
            log = node.logs(NAMESPACE, launcher, "mpi-launcher")
        except KeyError:
            return False
        return log.count("rank-started") >= workers

    await eventually(ranks_started, timeout=120, interval=0.1)
    pods = [await client.get(PODS, f"{name}-worker-{i}", NAMESPACE) for i in range(workers)]
    memory = await asyncio.to_thread(server_rss_mb, transport, pods)
    status = await wait_for_end(client, KIND.resource, NAMESPACE, name, timeout=120)
    log = node.logs(NAMESPACE, launcher, "mpi-launcher")
    if status.get("phase") != "Succeeded":
        raise RuntimeError(f"{name} ended {status.get('phase')}: {log}")
    started = max(float(t) for t in re.findall(r"rank-started (\d+\.\d+)", log))
    return started - submitted, started - created, memory / workers


async def main(workers: str, rounds: int) -> None:
    print(f"machine: {machine()}")
    agent, size = agent_source()
    rows = [("agent binary (static, stripped)", f"{size:,} B")]
    async with cluster(NAMESPACE) as client:
        node = ProcessNode(client, name="bench-launch", namespace=NAMESPACE)
        async with background(node.run()):
            await eventually(node.pods.has_synced, timeout=30)
            async with job_controller(client, KIND, namespace=NAMESPACE, agent=agent):
                for count in (int(n) for n in workers.split(",")):
                    for transport in ("ssh", "agent"):
                        runs = [
                            await one_run(
                                client, node, transport, count, f"{transport}-{count}-{n}"
                            )
                            for n in range(rounds)
                        ]
                        runs.sort()
                        total, overhead, rss = runs[median_index([r[0] for r in runs])]
                        label = f"{count} workers, {transport}"
                        rows.append((f"{label}: submit to all ranks started", f"{total:.2f} s"))
                        rows.append(
                            (f"{label}: launcher to all ranks started", f"{overhead:.2f} s")
                        )
                        rows.append((f"{label}: server VmRSS per worker", f"{rss:.1f} MB"))
    print_table(rows)


if __name__ == "__main__":
    run_benchmark(
        main,
        __doc__ or "",
        workers=(str, "2,16", "worker counts, comma-separated"),
        rounds=(odd_count, 3, "runs of each (odd: the median is one of them)"),
    )
