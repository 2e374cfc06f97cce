"""Kubeflow's job API on jobcore: `KubeflowMPIJobKind`, MPI Operator v2's MPIJob (v2beta1).

Modules: `spec` the API models, `children` what a job creates, `status` Kubeflow's status as
jobcore reads and writes it, `events` and `metrics` MPI Operator's Events and metrics, `kind`
the kind. What it shares with the T9k MPIJob (MPI flavours, the hostfile, Open MPI's
environment) is `jobkinds.mpi`'s.
"""

from jobkinds.kubeflow.kind import KubeflowMPIJobKind

__all__ = ["KubeflowMPIJobKind"]
