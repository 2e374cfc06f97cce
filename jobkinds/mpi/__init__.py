"""What the MPI kinds share: the T9k MPIJob, Kubeflow's MPIJob, and HorovodJob's `mpi` backend.

- `flavours`: Open MPI, MPICH and Intel MPI, what differs between their launchers, the
  hostfile's lines, the processes per worker, and each one's settings for jobcore's agent as
  its remote shell (`agent_shell_env`).
- `openmpi`: Open MPI's environment, and the checks of what it copies into the shell command
  that starts its daemons on the workers.
- `mpirun`: the launcher's command, its wait for the workers, and its environment.

The kind packages import these modules; these import no kind.
"""
