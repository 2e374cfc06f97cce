"""The bundled job kinds, built on jobcore's public APIs only (`jobcore`, `jobcore.jobs`,
`jobcore.launcher`).

One package per kind, each with the same modules: `spec` (the pydantic API model),
`children` (what a job creates), `kind` (the `JobKind` class, which `__init__` exports), and
`status`, `events`, `metrics` where the kind has them:

- `mpijob`: T9k's MPIJob; `colossalaijob`: T9k's ColossalAIJob; `horovodjob`: HorovodJob;
  `kubeflow`: Kubeflow MPI Operator v2's MPIJob.

What several kinds share is in modules no kind package owns, and the kind packages import
none of each other (import-linter checks both):

- `mpi`: MPI flavours, the hostfile, the MPI launcher's command, Open MPI's environment and
  its checks (both MPIJobs, and HorovodJob's `mpi` backend).
- `t9kshape`: T9k's current job shape (`replicaSpecs`) rewritten to the seed's (MPIJob and
  ColossalAIJob).
"""
