"""`jobcore sandbox`: a sample job run by the controllers on the testing kit or the real cluster.

- `command`: the `jobcore sandbox` command's options, and the sandbox they choose.
- `local`: a real control plane, a simulated or process-backed node, the controllers.
- `cluster`: the machine's real cluster, the controller deployed from its manifests.
- `realjobs`: the samples, one per kind and MPI (the real-tier tests run the same jobs).
- `clusterjobs`: the samples made to run in the real cluster's containers.
- `allreduce`: the MPI program the MPIJob samples compile with `mpicc`.
- `frameworks` and `images`: where the scripts put the frameworks and the cluster's images.
"""
