"""The `jobcore` command: run the controller, or a local sandbox with a sample job."""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import sys
import uuid

from controllers.demo import add_demo_controller
from jobcore import Client, LeaderElectionConfig, LeaderElectionLost, Manager, configure_logging


def _address(text: str) -> tuple[str, int] | None:
    if text in ("", "0", "off"):
        return None
    host, _, port = text.rpartition(":")
    return host or "0.0.0.0", int(port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jobcore", description=__doc__)
    parser.add_argument("--log-format", choices=["auto", "json", "console"], default="auto")
    parser.add_argument("--log-level", default="info")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the controller against the current cluster")
    run.add_argument("--kubeconfig", help="default: in-cluster config, else $KUBECONFIG")
    run.add_argument("--namespace", help="watch one namespace only (default: all)")
    run.add_argument("--metrics-bind-address", default=":8080", help='"off" to disable')
    run.add_argument("--health-probe-bind-address", default=":8081", help='"off" to disable')
    run.add_argument("--leader-elect", action="store_true", help="run as one of several replicas")
    run.add_argument("--leader-election-namespace", default="default")
    run.add_argument("--leader-election-id", default="jobcore-controller")

    sandbox = commands.add_parser("sandbox", help="a local control plane running a sample job")
    sandbox.add_argument("--keep", action="store_true", help="keep running after the job ends")
    return parser


async def _run(args: argparse.Namespace) -> int:
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
    add_demo_controller(manager, namespace=args.namespace)
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


async def _sandbox(args: argparse.Namespace) -> int:
    from controllers.sandbox import run_sandbox  # noqa: PLC0415 - needs the testing kit

    # SIGTERM and SIGHUP unwind like Ctrl-C, so the control plane is always stopped.
    sandbox = asyncio.current_task()
    assert sandbox is not None
    for sig in (signal.SIGTERM, signal.SIGHUP):
        asyncio.get_running_loop().add_signal_handler(sig, sandbox.cancel)
    try:
        phase = await run_sandbox(keep=args.keep)
    except asyncio.CancelledError:
        print("sandbox stopped")
        return 143
    print(f"sample job finished: {phase}")
    return 0 if phase == "Succeeded" else 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(format=args.log_format, level=args.log_level)
    command = _run if args.command == "run" else _sandbox
    try:
        return asyncio.run(command(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
