"""A Kueue stand-in for tests, over Kueue's API types served by the test API server.

Kueue's API types as CRDs (`crds`, `schemas`), and its
scheduler (`scheduler`, with `quota` for the flavour arithmetic) and workload controller
(`workloads`) run in process (`standin`) over them; `transitions` are the status changes
Kueue makes, `cluster` the state both read, `api` Kueue's names."""
