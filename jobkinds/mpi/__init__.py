"""What the MPI kinds share: the T9k MPIJob, Kubeflow's MPIJob, and HorovodJob's `mpi` backend.

- `flavours`: Open MPI, MPICH and Intel MPI, what differs between their launchers, the
  hostfile's lines and the processes per worker.
- `openmpi`: Open MPI's environment, and the checks of what it copies into the shell command
  that starts its daemons on the workers.
- `mpirun`: the launcher's command, its wait for the workers, and its environment.

The kind packages import these modules; these import no kind.
"""
