"""Kubeflow's job API on jobcore: `MPIJobKind`, MPI Operator v2's MPIJob (`kubeflow.org/v2beta1`).

Modules: `_api` the models, `_children` what a job creates, `_status` Kubeflow's status as
jobcore reads and writes it, `_metrics` MPI Operator's metrics, `mpijob` the kind.
"""

from jobkinds.kubeflow.mpijob import MPIJobKind

__all__ = ["MPIJobKind"]
