"""Shared set-up for benchmarks: the command line, the machine description and a running
control plane."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Sequence
from typing import Any

from jobcore import NAMESPACES
from jobcore import Client
from jobcore.testing import ControlPlane


def machine() -> str:
    """One line naming the CPU, core count and Python, for the record next to each figure."""
    model = platform.processor() or "unknown cpu"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def status_mb(pid: int, field: str) -> float:
    """A memory figure of /proc/PID/status in MB (`VmRSS:`, `VmHWM:`); 0 when it has none."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds a process has used so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steal_seconds() -> float:
    """CPU seconds the hypervisor has given to other guests so far, all cores together: a
    window with much of it ran on a slower machine than its neighbours."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def server_cpu(plane: ControlPlane) -> float:
    """CPU seconds used so far by the API server and etcd together."""
    return sum(cpu_seconds(pid) for pid in plane.pids.values())


def odd_count(text: str) -> int:
    """An argparse type: a positive odd number of rounds, so that one round is the median."""
    count = int(text)
    if count < 1 or count % 2 == 0:
        raise argparse.ArgumentTypeError(f"{count}: an odd number is needed, 1 or more")
    return count


def median_index(values: Sequence[float]) -> int:
    """The index of the median of an odd number of values."""
    if len(values) % 2 == 0:
        raise ValueError(f"{len(values)} values have no single median")
    return sorted(range(len(values)), key=values.__getitem__)[len(values) // 2]


Row = tuple[str, str] | tuple[str, str, str]
"""(figure, value with its unit), or (figure, value, target)."""


def print_table(rows: Sequence[Row]) -> None:
    """Print figures as an aligned table with their targets."""
    width = max(len("figure"), *(len(row[0]) for row in rows))
    print(f"{'figure':{width}} {'value':>12} {'target':>10}")
    for figure, value, *target in rows:
        print(f"{figure:{width}} {value:>12} {''.join(target):>10}")


@contextlib.asynccontextmanager
async def cluster(namespace: str = "bench") -> AsyncIterator[Client]:
    """A fresh control plane with one namespace, and a client for it."""
    async with ControlPlane() as plane:
        client = await Client.from_kubeconfig(plane.kubeconfig_path)
        try:
            await client.create(
                NAMESPACES,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            )
            yield client
        finally:
            await client.close()


Option = tuple[Callable[[str], Any], Any] | tuple[Callable[[str], Any], Any, str]
"""A command-line option: its type and default, and perhaps its help text."""


def run_benchmark(
    main: Callable[..., Coroutine[Any, Any, None]], doc: str, **options: Option
) -> None:
    """Run `main` with the command line's `--name value` of each of `options`, by name.

    `options` map main's keyword names to their option (`cache_pods`: `--cache-pods`); the
    first line of `doc`, the benchmark's docstring, describes the command.
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, (kind, default, *help_text) in options.items():
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=kind, default=default, help=" ".join(help_text) or None)
    asyncio.run(main(**vars(parser.parse_args())))
