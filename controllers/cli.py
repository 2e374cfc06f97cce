"""The `jobcore` command: run the controller, write its manifests, or try it in a sandbox."""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import sys
import uuid
from typing import Any

from controllers.kinds import KindLoadError, installed_kinds
from jobcore import (
    Client,
    GangScheduler,
    JobKind,
    LeaderElectionConfig,
    LeaderElectionLost,
    Manager,
    SchedulerPlugins,
    T9kScheduler,
    Volcano,
    add_job_controller,
    configure_logging,
)


def _address(text: str) -> tuple[str, int] | None:
    if text in ("", "0", "off"):
        return None
    host, _, port = text.rpartition(":")
    return host or "0.0.0.0", int(port)


def _kind_names(text: str | None) -> list[str] | None:
    return [name.strip() for name in text.split(",") if name.strip()] if text else None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jobcore", description=__doc__)
    parser.add_argument("--log-format", choices=["auto", "json", "console"], default="auto")
    parser.add_argument("--log-level", default="info")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the controller against the current cluster")
    run.add_argument("--kubeconfig", help="default: in-cluster config, else $KUBECONFIG")
    run.add_argument("--kinds", help="comma-separated kinds to run (default: all installed)")
    run.add_argument("--namespace", help="watch one namespace only (default: all)")
    run.add_argument("--metrics-bind-address", default=":8080", help='"off" to disable')
    run.add_argument("--health-probe-bind-address", default=":8081", help='"off" to disable')
    run.add_argument("--leader-elect", action="store_true", help="run as one of several replicas")
    run.add_argument("--leader-election-namespace", default="default")
    run.add_argument("--leader-election-id", default="jobcore-controller")
    run.add_argument("--max-concurrent-reconciles", type=int, default=16, help="per kind")
    run.add_argument(
        "--gang-scheduler",
        choices=["none", "t9k", "volcano", "scheduler-plugins"],
        default="none",
        help="give every job without spec.scheduler a PodGroup of this scheduler",
    )
    run.add_argument("--gang-queue", help="the queue of jobs that name none (t9k, volcano)")
    run.add_argument("--gang-scheduler-name", help="the gang scheduler's schedulerName")

    manifests = commands.add_parser("manifests", help="write CRDs, RBAC and the Deployment")
    manifests.add_argument("--output", default="manifests", help="folder (default: manifests)")
    manifests.add_argument("--kinds", help="comma-separated kinds (default: all installed)")

    sandbox = commands.add_parser("sandbox", help="a local control plane running a sample job")
    sandbox.add_argument("--keep", action="store_true", help="keep running after the job ends")
    sandbox.add_argument(
        "--real",
        action="store_true",
        help="run pods as host processes: a real mpirun over ssh (root, Open MPI, sshd)",
    )
    return parser


def _kinds(text: str | None) -> list[JobKind[Any]]:
    return [installed.kind for installed in installed_kinds(_kind_names(text))]


def _gang_scheduler(args: argparse.Namespace) -> GangScheduler | None:
    named = {"scheduler_name": args.gang_scheduler_name} if args.gang_scheduler_name else {}
    if args.gang_scheduler == "t9k":
        return T9kScheduler(queue=args.gang_queue or "default", **named)
    if args.gang_scheduler == "volcano":
        return Volcano(queue=args.gang_queue, **named)
    if args.gang_scheduler == "scheduler-plugins":
        return SchedulerPlugins(**named)
    return None


async def _run(args: argparse.Namespace) -> int:
    kinds = _kinds(args.kinds)
    if args.kubeconfig:
        client = await Client.from_kubeconfig(args.kubeconfig)
    else:
        client = await Client.from_environment()
    election = None
    if args.leader_elect:
        election = LeaderElectionConfig(
            name=args.leader_election_id,
            namespace=args.leader_election_namespace,
            identity=f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}",
        )
    manager = Manager(
        client,
        leader_election=election,
        metrics_address=_address(args.metrics_bind_address),
        health_address=_address(args.health_probe_bind_address),
    )
    for kind in kinds:
        add_job_controller(
            manager,
            kind,
            namespace=args.namespace,
            max_concurrent_reconciles=args.max_concurrent_reconciles,
            gang_scheduler=_gang_scheduler(args),
        )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, manager.stop)
    try:
        await manager.run()
    except LeaderElectionLost:
        return 1
    except RuntimeError:
        return 2
    finally:
        await client.close()
    return 0


async def _manifests(args: argparse.Namespace) -> int:
    from controllers.manifests import write_manifests  # noqa: PLC0415

    for path in write_manifests(_kinds(args.kinds), args.output):
        print(path)
    return 0


async def _sandbox(args: argparse.Namespace) -> int:
    from controllers.sandbox import SandboxError, run_sandbox  # noqa: PLC0415 - testing kit

    # Ctrl-C, SIGTERM and SIGHUP all unwind, so the control plane is always stopped.
    sandbox = asyncio.current_task()
    assert sandbox is not None
    received: list[int] = []

    def stop(sig: int) -> None:
        received.append(sig)
        sandbox.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        asyncio.get_running_loop().add_signal_handler(sig, stop, sig)
    try:
        phase = await run_sandbox(keep=args.keep, real=args.real)
    except SandboxError as error:
        print(f"jobcore sandbox: {error}", file=sys.stderr)
        return 2
    except asyncio.CancelledError:
        print("sandbox stopped")
        return 128 + (received[0] if received else signal.SIGTERM)
    print(f"sample job finished: {phase}")
    print("the sandbox's control plane is gone; `jobcore sandbox --keep` keeps it for kubectl")
    return 0 if phase == "Succeeded" else 1


_COMMANDS = {"run": _run, "manifests": _manifests, "sandbox": _sandbox}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(format=args.log_format, level=args.log_level)
    try:
        return asyncio.run(_COMMANDS[args.command](args))
    except KindLoadError as error:
        print(f"jobcore: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
