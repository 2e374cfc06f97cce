"""A tiny MPI program, compiled on the host with mpicc, for running MPIJobs for real."""

from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Every rank adds rank+1; each prints the sum. A rank given as argv[1] then exits 3. */
int main(int argc, char **argv) {
    int rank, size, sum = 0, fail = argc > 1 ? atoi(argv[1]) : -1;
    char host[256];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    int value = rank + 1;
    MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s: sum=%d\n", rank, size, host, sum);
    fflush(stdout);
    if (rank == fail) exit(3);
    MPI_Finalize();
    return 0;
}
"""


def compile_allreduce(folder: Path) -> Path:
    """Build the program into `folder` (readable by every pod) and return its path."""
    source = folder / "allreduce.c"
    source.write_text(SOURCE)
    binary = folder / "allreduce"
    subprocess.run(["mpicc", "-O1", "-o", str(binary), str(source)], check=True)
    folder.chmod(0o755)
    return binary
