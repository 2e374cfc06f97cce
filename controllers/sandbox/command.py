"""The `jobcore sandbox` command: its options, and running the sandbox the options choose."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
from typing import Any

from controllers.sandbox import realjobs
from jobcore import configure_logging
from jobcore.jobs import AgentSource


def add_parser(commands: Any) -> None:
    """The `sandbox` subcommand of the CLI's `commands` (argparse's subparsers)."""
    sandbox = commands.add_parser("sandbox", help="a local control plane running a sample job")
    sandbox.add_argument(
        "--keep",
        action="store_true",
        help="keep running after the job ends (with --cluster: leave the cluster up)",
    )
    sandbox.add_argument(
        "--cluster",
        action="store_true",
        help="run the sample in the machine's real cluster (kubelet, containerd), the "
        "controller deployed from its manifests (root; scripts/cluster.sh sets it up)",
    )
    sandbox.add_argument(
        "--down", action="store_true", help="take down the real cluster --keep left up"
    )
    sandbox.add_argument(
        "--real",
        action="store_true",
        help="run pods as host processes with the real launcher over ssh "
        "(root; scripts/frameworks.sh installs the frameworks)",
    )
    sandbox.add_argument(
        "--kind",
        choices=realjobs.KINDS,
        default="mpijob",
        help="with --real or --cluster: the sample's kind",
    )
    sandbox.add_argument(
        "--mpi",
        choices=sorted(realjobs.MPIS),
        default="openmpi",
        help="with --real or --cluster, --kind mpijob: Open MPI 4 (openmpi) or 5 (not --cluster), "
        "MPICH or Intel MPI",
    )
    sandbox.add_argument(
        "--launch",
        choices=("ssh", "agent"),
        default="ssh",
        help="with --real or --cluster: how the launcher reaches the workers: ssh, or jobcore's "
        "agent (spec.transport: agent; with --cluster, an MPI's image without sshd)",
    )
    sandbox.add_argument(
        "--agent-path",
        help="with --real --launch agent: the host's jobcore-agent, which the pods copy "
        "(scripts/agent.sh builds it; scripts/sandbox.sh passes it)",
    )
    sandbox.add_argument(
        "--verbose",
        action="store_true",
        help="the controller's log lines on stderr, not in the log file",
    )


async def sandbox(args: argparse.Namespace) -> int:
    """Run the sandbox the options ask for; 0 once its sample job Succeeded."""
    from controllers.sandbox.cluster import run_cluster_sandbox  # noqa: PLC0415 - testing kit
    from controllers.sandbox.cluster import take_down  # noqa: PLC0415 - testing kit
    from controllers.sandbox.local import SandboxError  # noqa: PLC0415 - testing kit
    from controllers.sandbox.local import run_sandbox  # noqa: PLC0415 - testing kit

    # Ctrl-C, SIGTERM and SIGHUP all unwind, so the control plane is always stopped.
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def stop(sig: int) -> None:
        received.append(sig)
        task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        asyncio.get_running_loop().add_signal_handler(sig, stop, sig)
    try:
        if args.down:
            await take_down(sys.stdout)
            return 0
        if args.cluster:
            phase = await run_cluster_sandbox(
                kind=args.kind, mpi=args.mpi, launch=args.launch, keep=args.keep, out=sys.stdout
            )
        else:
            agent = _host_agent(args)
            phase = await run_sandbox(
                keep=args.keep, real=args.real, kind=args.kind, mpi=args.mpi, agent=agent
            )
            print("the sandbox's control plane is gone; `jobcore sandbox --keep` keeps it")
    except SandboxError as error:
        print(f"jobcore sandbox: {error}", file=sys.stderr)
        return 2
    except asyncio.CancelledError:
        print("sandbox stopped")
        return 128 + (received[0] if received else signal.SIGTERM)
    print(f"sample job finished: {phase}")
    return 0 if phase == "Succeeded" else 1


def _host_agent(args: argparse.Namespace) -> AgentSource | None:
    """The host's agent for `--real --launch agent` (the process node ignores images)."""
    from controllers.sandbox.local import SandboxError  # noqa: PLC0415 - testing kit

    if args.launch == "ssh":
        return None
    if not args.real:
        raise SandboxError("--launch agent runs with --real or --cluster")
    if not args.agent_path:
        raise SandboxError("--real --launch agent needs --agent-path (scripts/agent.sh builds it)")
    return AgentSource(image="host", path=args.agent_path)


def log_to_a_file(level: str) -> None:
    """The controller's log lines as JSON into a new file, whose name is printed."""
    descriptor, path = tempfile.mkstemp(prefix="jobcore-sandbox-", suffix=".log")
    log = open(descriptor, "w", buffering=1)  # noqa: SIM115 - open for the whole run
    configure_logging(format="json", level=level, stream=log)
    print(f"controller log: {path} (--verbose shows it here)")
