/* Kubeflow's pi example (mpi-operator examples/v2beta1/pi/pi.cc) in C: each rank throws
   darts at the square [-1, 1]^2 from its own seeded generator, rank 0 sums the hits in the
   unit circle and prints the estimate. The output is the example's: "Workers: N", then
   "Rank R on host H" per rank, then "pi is approximately ...". Each rank also says which
   user it runs as, for the tests of non-root jobs. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

/* std::minstd_rand: x' = 48271 x mod (2^31 - 1), a zero seed taken as 1. */
static unsigned long next(unsigned long *state) {
    *state = (*state * 48271UL) % 2147483647UL;
    return *state;
}

/* A uniform double in [-1, 1). */
static double uniform(unsigned long *state) {
    return -1.0 + 2.0 * (double)(next(state) - 1) / 2147483646.0;
}

int main(int argc, char **argv) {
    int rank, workers, name_size;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &workers);
    if (rank == 0) {
        printf("Workers: %d\n", workers);
    }
    MPI_Get_processor_name(host, &name_size);
    printf("Rank %d on host %s\n", rank, host);
    printf("Rank %d runs as uid %d gid %d\n", rank, (int)getuid(), (int)getgid());
    fflush(stdout);

    unsigned long state = rank == 0 ? 1UL : (unsigned long)rank;
    long long count = 0, total = 0;
    const int tests = 10000000;
    for (int i = 0; i < tests; i++) {
        double x = uniform(&state), y = uniform(&state);
        if (x * x + y * y <= 1.0) {
            count++;
        }
    }
    MPI_Reduce(&count, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("pi is approximately %.16f\n", 4.0 * (double)total / tests / workers);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
