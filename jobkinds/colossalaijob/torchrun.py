"""ColossalAIJob through jobcore's agent: torchrun started on every worker in `colossalai run`'s
place.

`colossalai run` reaches its hosts with fabric, a Python ssh client, so the agent cannot stand
in for its ssh as it does for MPI's. With `spec.transport: agent` the launcher starts, through
`jobcore-agent rsh`, on every worker at once, the torchrun command colossalai run builds for it
(`torchrun_words`), and waits for them all (FANOUT_SCRIPT). Every user string reaches the
script as a positional argument; each worker's command is quoted word by word (`shlex.quote`)
for the worker's `sh -c`, so it reaches torchrun and the script as written.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from jobcore.jobs import Job
from jobcore.launcher import AGENT
from jobcore.launcher import SSH_WAIT_SECONDS
from jobcore.launcher import agent_launch_command
from jobkinds.colossalaijob.spec import ColossalAIJobSpec

MASTER_PORT = 29500

FANOUT_SCRIPT = r"""agent=$1
shift
pids=
hosts=
stopped=0
interrupted=0
trap 'stopped=143; interrupted=1; kill -TERM $pids 2>/dev/null' TERM INT
echo "jobcore: starting torchrun on $(($# / 2)) worker(s) through the agent"
while [ $# -ge 2 ]; do
  "$agent" rsh -n "$1" "$2" &
  pids="$pids $!"
  hosts="$hosts $1"
  shift 2
done
code=0
failed=
set -f
set -- $hosts
for pid in $pids; do
  interrupted=0
  wait "$pid"
  status=$?
  # A trapped signal ends `wait` early, with its own code: wait again, for the rsh's own
  # (the shell keeps it for this wait, ended or not; 127 when the first wait had it already).
  while [ "$interrupted" -eq 1 ]; do
    interrupted=0
    wait "$pid"
    again=$?
    [ "$again" -eq 127 ] || status=$again
  done
  if [ "$status" -ne 0 ]; then
    echo "jobcore: torchrun on ${1%%.*} exited with code $status"
    failed="$failed ${1%%.*}"
    [ "$code" -ne 0 ] || code=$status
  fi
  shift
done
[ "$code" -ne 0 ] || code=$stopped
if [ "$failed" ]; then
  echo "jobcore: torchrun failed on:$failed; exit code $code, the first one's"
elif [ "$code" -ne 0 ]; then
  echo "jobcore: stopped by a signal; torchrun ended on every worker"
else
  echo "jobcore: torchrun succeeded on every worker"
fi
exit "$code"
"""
"""POSIX sh: `AGENT HOST COMMAND [HOST COMMAND...]` runs each COMMAND on its HOST through the
agent, all at once, and once every one has ended (colossalai run too waits for every host)
exits with the code of the first host, in the given order, whose command failed; its last
line, the launcher's termination message, names every failed host. SIGTERM and
SIGINT are passed on to every rsh, which passes them on to its worker's torchrun; a launch so
stopped never exits 0 (143 if every worker's torchrun did)."""


def torchrun_words(job: Job[ColossalAIJobSpec], hosts: Sequence[str], rank: int) -> list[str]:
    """What colossalai run (torch > 1.9) runs on the worker of node rank `rank`: torchrun with
    the per-node processes, node count and rank, master address (the first worker) and port,
    then spec.worker.torchArgs, the script and its arguments."""
    worker = job.spec.worker
    return [
        "torchrun",
        f"--nproc_per_node={worker.proc_per_worker}",
        f"--nnodes={len(hosts)}",
        f"--node_rank={rank}",
        f"--master_addr={hosts[0]}",
        f"--master_port={MASTER_PORT}",
        *worker.torch_args,
        *worker.command,
    ]


def worker_command(words: Sequence[str]) -> str:
    """`words` as the command line a worker's `sh -c` runs, each word quoted: torchrun in the
    shell's place."""
    return "exec " + " ".join(map(shlex.quote, words))


def fanout_args(job: Job[ColossalAIJobSpec], hosts: Sequence[str]) -> list[str]:
    """FANOUT_SCRIPT's arguments: the agent, then each worker's host and command."""
    args = [AGENT]
    for rank, host in enumerate(hosts):
        args += [host, worker_command(torchrun_words(job, hosts, rank))]
    return args


def agent_launcher_command(
    job: Job[ColossalAIJobSpec], hosts: Sequence[str], *, hostfile: str
) -> list[str]:
    """The launcher's command: the agent waits for every worker's agent (as the ssh launcher
    waits for sshd), runs FANOUT_SCRIPT in sh, and records the workers it reached."""
    script = ["/bin/sh", "-c", FANOUT_SCRIPT, "jobcore-colossalai-launcher"]
    return agent_launch_command(
        [*script, *fanout_args(job, hosts)], hostfile=hostfile, timeout=SSH_WAIT_SECONDS
    )
