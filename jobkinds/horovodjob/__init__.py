"""The HorovodJob kind: workers running sshd, and a launcher that runs horovodrun over ssh.

Our API in T9k's group `batch.tensorstack.dev/v1beta1`: spec.worker{replicas, slotsPerWorker,
cmd, template}, spec.horovod{backend, networkInterfaces, startTimeout, glooTimeoutSeconds},
spec.elastic and spec.ssh. A static job lists its workers in a hostfile, and its launcher
starts once every worker is Ready and waits again for each to accept ssh. An elastic job
(spec.elastic, Gloo only) hands horovodrun a host discovery script that probes which workers
accept ssh; it scales with spec.worker.replicas and replaces a lost worker instead of failing.
Either way the launcher's exit code decides the outcome. With spec.transport agent, jobcore's
agent serves on the workers in sshd's place and is horovodrun's `ssh` (and mpirun's remote
shell); a launch that reached too few workers then fails the job.

Modules: `spec` the API models, `children` what a job creates, `kind` the kind.
"""

from jobkinds.horovodjob.kind import HorovodJobKind

__all__ = ["HorovodJobKind"]
