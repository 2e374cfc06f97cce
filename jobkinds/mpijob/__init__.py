"""The MPIJob kind: workers running sshd, and a launcher that runs mpirun (or mpiexec) over ssh.

The API is T9k's `batch.tensorstack.dev/v1beta1` MPIJob (spec.worker, spec.mca, spec.mpiHome,
spec.ssh), plus spec.mpiImplementation: Open MPI (the default), or the Hydra-based MPICH and
Intel MPI. The launcher is created only once every worker is Ready, and its script waits
again for each worker to resolve and accept ssh: the start-up race is the most reported bug of
the Kubeflow MPI Operator. The controller sees only the launcher's exit, so Succeeded means
"mpirun exited 0", as T9k documents.

Modules: `spec` the API models, `children` what a job creates, `kind` the kind. What both
MPIJobs share (MPI flavours, the launcher's command) is `jobkinds.mpi`'s.
"""

from jobkinds.mpijob.kind import MPIJobKind

__all__ = ["MPIJobKind"]
