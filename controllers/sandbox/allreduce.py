"""A tiny MPI program, compiled on the host with mpicc, for running MPIJobs for real."""

from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Every rank adds rank+1; each prints the sum. A rank given as argv[1] then exits 3, after
   MPI_Finalize: a rank that leaves without it hangs MPICH's other ranks across hosts. */
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
    MPI_Finalize();
    return rank == fail ? 3 : 0;
}
"""


def compile_allreduce(folder: Path, mpicc: Path | str = "mpicc") -> Path:
    """Build the program with `mpicc` into `folder` (readable by every pod); its path."""
    source = folder / "allreduce.c"
    source.write_text(SOURCE)
    binary = folder / "allreduce"
    subprocess.run([str(mpicc), "-O1", "-o", str(binary), str(source)], check=True)
    folder.chmod(0o755)
    return binary
