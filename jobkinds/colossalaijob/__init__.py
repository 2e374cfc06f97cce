"""The ColossalAIJob kind: workers running sshd, and a launcher that runs `colossalai run`.

The API is the seed shape of T9k's `batch.tensorstack.dev/v1beta1` ColossalAIJob (spec.ssh,
spec.launcher, spec.worker). The launcher is created only once every worker is Ready, and
waits again for each worker to resolve and accept ssh (the wait MPIJob uses), then runs
`colossalai run --hostfile ... --nproc_per_node <procPerWorker> --master_addr <worker-0>
--master_port 29500 [--extra_launch_args <torchArgs>] -- <command>`. `colossalai run`
cannot re-admit a restarted worker, so workers never restart and any worker that stops fails
the job; the launcher's exit code decides otherwise. With `spec.transport: agent` the workers
serve jobcore's agent instead of sshd, and the launcher starts through it, on every worker, the
torchrun `colossalai run` would have started there.

Modules: `spec` the API models, `children` what a job creates, `torchrun` the launch through
the agent, `kind` the kind.
"""

from jobkinds.colossalaijob.kind import ColossalAIJobKind

__all__ = ["ColossalAIJobKind"]
