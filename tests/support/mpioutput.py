"""What the real-MPI samples' ranks print, read from the launcher's log, on a ProcessNode or in
the real cluster."""

from __future__ import annotations

import re

Rank = tuple[int, int, str, int]
"""(rank, world size, host, sum) from the allreduce's line `rank R of N on HOST: sum=S`."""


def ranks(log: str, prefix: str = "") -> list[Rank]:
    """Every allreduce line of `log`, by rank; `prefix` matches what a launcher writes before
    each rank's output (horovodrun's `[1,0]<stdout>:`, say)."""
    found = re.findall(rf"^{prefix}rank (\d+) of (\d+) on (\S+): sum=(\d+)$", log, re.M)
    return sorted((int(r), int(n), host, int(s)) for r, n, host, s in found)


def on_two_workers(job: str, slots: int = 2) -> list[Rank]:
    """`ranks` of job `job`'s allreduce run to its end on 2 workers of `slots` ranks each,
    filled in order: each rank adds rank + 1."""
    size = 2 * slots
    hosts = [f"{job}-worker-{rank // slots}" for rank in range(size)]
    return [(rank, size, host, size * (size + 1) // 2) for rank, host in enumerate(hosts)]


def assert_pingpong_on_two_workers(log: str, job: str) -> None:
    """Intel MPI's PingPong (`realjobs.mpi_program("intel", ...)`) ran to its end between ranks
    0 and 2, one on each of job `job`'s 2 workers of 2 slots."""
    assert "# Benchmarking PingPong" in log, log
    assert re.search(r"# #processes = 2; rank order \(rowwise\): *\n# +0 +2 *\n", log), log
    # I_MPI_DEBUG=5's pinning table: rank, pid, host, cpus.
    hosts = dict(re.findall(r"^\[0\] MPI startup\(\): (\d) +\d+ +(\S+) +\{", log, re.M))
    assert hosts == {str(rank): f"{job}-worker-{rank // 2}" for rank in range(4)}, log
    # The largest message's row: bytes, repetitions, t[usec], Mbytes/sec.
    rows = [line.split() for line in log.splitlines() if re.match(r"\s+65536\s", line)]
    assert rows and float(rows[0][3]) > 0, log
