"""The `jobcore` command: run the controller, list its kinds, check and render jobs offline,
write its manifests, or try it in a sandbox."""

from __future__ import annotations

import argparse
import socket
import sys
import uuid
from typing import Any

from controllers import describe
from controllers import helptexts
from controllers import render
from controllers.apiclient import ClientConfigError
from controllers.apiclient import add_client_arguments
from controllers.apiclient import client_from
from controllers.dashboard import command as dashboardcommand
from controllers.kinds import ENTRY_POINT_GROUP
from controllers.kinds import KindLoadError
from controllers.kinds import installed_kinds
from controllers.kinds import kind_names
from controllers.kinds import load_all_kinds
from controllers.kueueflags import add_kueue_arguments
from controllers.kueueflags import kueue_scope
from controllers.sandbox import command as sandboxcommand
from controllers.serving import add_server_arguments
from controllers.serving import server_limits
from jobcore import LeaderElectionConfig
from jobcore import LeaderElectionLost
from jobcore import Manager
from jobcore import configure_gc
from jobcore import configure_logging
from jobcore import configure_malloc
from jobcore.jobs import DEFAULT_AGENT
from jobcore.jobs import DEFAULT_CLUSTER_DOMAIN
from jobcore.jobs import RETRY_BACKOFF
from jobcore.jobs import AgentSource
from jobcore.jobs import GangScheduler
from jobcore.jobs import JobKind
from jobcore.jobs import RetryBackoff
from jobcore.jobs import SchedulerPlugins
from jobcore.jobs import T9kScheduler
from jobcore.jobs import Volcano
from jobcore.jobs import add_job_controller
from jobcore.jobs import kueue_served

if sys.platform == "win32":  # uvloop is not made for Windows
    from asyncio import run as _run_event_loop
else:
    # uvloop's event loop, sockets and TLS are in C, where the controller spends much of its
    # time: on the API server's connections.
    from uvloop import run as _run_event_loop


def _address(text: str) -> tuple[str, int] | None:
    if text in ("", "0", "off"):
        return None
    host, _, port = text.rpartition(":")
    return host or "0.0.0.0", int(port)


def _add_gang_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gang-scheduler",
        choices=["none", "t9k", "volcano", "scheduler-plugins"],
        default="none",
        help="give every job without spec.scheduler a PodGroup of this scheduler",
    )
    parser.add_argument("--gang-queue", help="the queue of jobs that name none (t9k, volcano)")
    parser.add_argument("--gang-scheduler-name", help="the gang scheduler's schedulerName")


def _add_cluster_domain(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cluster-domain",
        type=render.cluster_domain,
        default=DEFAULT_CLUSTER_DOMAIN,
        help="the cluster's DNS domain, in the workers' names in hostfiles and DNS search lists "
        f"(default: {DEFAULT_CLUSTER_DOMAIN})",
    )


def _add_agent(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent-image",
        default=DEFAULT_AGENT.image,
        help="the image an init container copies jobcore's launch agent from, for jobs that "
        f"launch without ssh (default: {DEFAULT_AGENT.image}, this controller's own)",
    )
    parser.add_argument(
        "--agent-path",
        default=DEFAULT_AGENT.path,
        help=f"the agent's path in that image (default: {DEFAULT_AGENT.path})",
    )


def _add_job_files(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="JOB.yaml", help='job files; "-" is stdin')
    parser.add_argument(
        "-n",
        "--namespace",
        default=render.DEFAULT_NAMESPACE,
        help="the namespace of jobs that name none (default: default)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jobcore", description=__doc__)
    parser.add_argument("--log-format", choices=["auto", "json", "console"], default="auto")
    parser.add_argument("--log-level", default="info")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the controller against the current cluster")
    run.add_argument("--kinds", help="comma-separated kinds to run (default: all installed)")
    run.add_argument("--namespace", help="watch one namespace only (default: all)")
    run.add_argument(
        "--metrics-bind-address",
        default="127.0.0.1:8080",
        help="where /metrics listens, unauthenticated (default: 127.0.0.1:8080, loopback "
        'only; ":8080" is every interface; "off" disables it)',
    )
    run.add_argument("--health-probe-bind-address", default=":8081", help='"off" to disable')
    add_server_arguments(run)
    run.add_argument("--leader-elect", action="store_true", help="run as one of several replicas")
    run.add_argument("--leader-election-namespace", default="default")
    run.add_argument("--leader-election-id", default="jobcore-controller")
    defaults = LeaderElectionConfig(name="", namespace="")
    for field in ("lease_duration", "renew_deadline", "retry_period"):
        run.add_argument(
            f"--leader-election-{field.replace('_', '-')}",
            type=float,
            default=getattr(defaults, field),
            metavar="SECONDS",
        )
    run.add_argument("--max-concurrent-reconciles", type=int, default=32, help="per kind")
    add_kueue_arguments(run)
    add_client_arguments(run)
    run.add_argument(
        "--retry-backoff",
        type=int,
        default=RETRY_BACKOFF.initial,
        metavar="SECONDS",
        help="wait before recreating a job's pods after its first restart or replacement; "
        f"doubles with each one in a row (default: {RETRY_BACKOFF.initial})",
    )
    run.add_argument(
        "--retry-backoff-max",
        type=int,
        default=RETRY_BACKOFF.maximum,
        metavar="SECONDS",
        help="the longest such wait; a job that ran this long waits --retry-backoff again "
        f"(default: {RETRY_BACKOFF.maximum})",
    )
    _add_gang_arguments(run)
    _add_cluster_domain(run)
    _add_agent(run)

    raw = argparse.RawDescriptionHelpFormatter
    offline = {
        name: commands.add_parser(name, help=summary, description=text, formatter_class=raw)
        for name, summary, text in (
            ("kinds", "list the installed job kinds", helptexts.KINDS),
            (
                "validate",
                "check job files offline (exit status 0 or 1, for CI)",
                helptexts.VALIDATE,
            ),
            (
                "render",
                "print what the controller would create for job files, offline",
                helptexts.RENDER,
            ),
        )
    }
    _add_job_files(offline["validate"])
    rendering = offline["render"]
    _add_job_files(rendering)
    rendering.add_argument(
        "--workers-ready",
        action="store_true",
        help="as if the first render's pods exist, Running and Ready (adds launchers)",
    )
    rendering.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml")
    rendering.add_argument(
        "--redact-secrets", action="store_true", help="replace Secret values with <redacted>"
    )
    _add_gang_arguments(rendering)
    _add_agent(rendering)
    _add_cluster_domain(rendering)

    manifests = commands.add_parser("manifests", help="write CRDs, RBAC and the Deployment")
    manifests.add_argument("--output", default="manifests", help="folder (default: manifests)")
    manifests.add_argument("--kinds", help="comma-separated kinds (default: all installed)")
    manifests.add_argument(
        "--namespace",
        help="install into this namespace and watch it only, with a Role, not a ClusterRole "
        "(default: jobcore-system, watching all namespaces)",
    )

    sandboxcommand.add_parser(commands)
    dashboardcommand.add_parser(commands)
    describe.add_parsers(commands)
    return parser


def _kinds(text: str | None) -> list[JobKind[Any]]:
    return [installed.kind for installed in installed_kinds(kind_names(text))]


def _gang_scheduler(args: argparse.Namespace) -> GangScheduler | None:
    named = {"scheduler_name": args.gang_scheduler_name} if args.gang_scheduler_name else {}
    if args.gang_scheduler == "t9k":
        return T9kScheduler(queue=args.gang_queue or "default", **named)
    if args.gang_scheduler == "volcano":
        return Volcano(queue=args.gang_queue, **named)
    if args.gang_scheduler == "scheduler-plugins":
        return SchedulerPlugins(**named)
    return None


def _election(args: argparse.Namespace) -> LeaderElectionConfig | None:
    """The lease `run`'s flags ask to compete for; ValueError for timings that do not fit."""
    if not args.leader_elect:
        return None
    return LeaderElectionConfig(
        name=args.leader_election_id,
        namespace=args.leader_election_namespace,
        identity=f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}",
        lease_duration=args.leader_election_lease_duration,
        renew_deadline=args.leader_election_renew_deadline,
        retry_period=args.leader_election_retry_period,
    )


async def _run(args: argparse.Namespace) -> int:
    kinds = _kinds(args.kinds)
    client = await client_from(args)
    manager = Manager(
        client,
        leader_election=args.election,
        metrics_address=_address(args.metrics_bind_address),
        health_address=_address(args.health_probe_bind_address),
        server_limits=server_limits(args),
    )
    gang_scheduler = _gang_scheduler(args)
    kueue = args.kueue == "on" or (args.kueue == "auto" and await kueue_served(client))
    configure_gc()
    configure_malloc()
    for kind in kinds:
        add_job_controller(
            manager,
            kind,
            namespace=args.namespace,
            max_concurrent_reconciles=args.max_concurrent_reconciles,
            gang_scheduler=gang_scheduler,
            cluster_domain=args.cluster_domain,
            agent=AgentSource(args.agent_image, args.agent_path),
            retry_backoff=args.retry,
            kueue=kueue,
            kueue_scope=args.kueue_scope,
        )
    manager.stop_on_signals()
    try:
        await manager.run()
    except LeaderElectionLost:
        return 1
    except RuntimeError:
        return 2
    finally:
        await client.close()
    return 0


async def _list_kinds(args: argparse.Namespace) -> int:
    loaded, errors = load_all_kinds()
    for error in errors:
        print(f"jobcore kinds: skipped, failed to load: {error}", file=sys.stderr)
    if not loaded and not errors:
        print(f"jobcore kinds: no job kinds installed ({ENTRY_POINT_GROUP})", file=sys.stderr)
    if loaded:
        rows = [("NAME", "KIND", "GROUP/VERSION", "SHORT NAMES", "SOURCE")]
        rows += [
            (
                installed.name,
                installed.kind.resource.kind,
                installed.kind.resource.api_version,
                ",".join(installed.kind.short_names) or "-",
                installed.source,
            )
            for installed in loaded
        ]
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        for row in rows:
            cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            print("  ".join(cells).rstrip())
    return 0 if loaded and not errors else 1


async def _validate(args: argparse.Namespace) -> int:
    jobs, problems = render.load_jobs(args.files, _kinds(None), namespace=args.namespace)
    for job in jobs:
        print(f"{job}: valid")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


async def _render(args: argparse.Namespace) -> int:
    jobs, problems = render.load_jobs(
        args.files,
        _kinds(None),
        namespace=args.namespace,
        cluster_domain=args.cluster_domain,
        agent=AgentSource(args.agent_image, args.agent_path),
    )
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    children = []
    gang_scheduler = _gang_scheduler(args)
    for job in jobs:
        try:
            children += render.render_job(
                job.kind, job.job, workers_ready=args.workers_ready, gang_scheduler=gang_scheduler
            )
        except render.RenderError as error:
            print(f"{job}: {error}", file=sys.stderr)
            return 1
    if args.redact_secrets:
        children = render.redact_secrets(children)
    sys.stdout.write(render.dump(children, args.output))
    return 0


async def _manifests(args: argparse.Namespace) -> int:
    from controllers.manifests import write_manifests  # noqa: PLC0415

    for path in write_manifests(_kinds(args.kinds), args.output, args.namespace):
        print(path)
    return 0


_COMMANDS = {
    "run": _run,
    "kinds": _list_kinds,
    "validate": _validate,
    "render": _render,
    "manifests": _manifests,
    "sandbox": sandboxcommand.sandbox,
    "dashboard": dashboardcommand.dashboard,
    "describe": describe.describe,
    "logs": describe.logs,
}


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "run":
        try:
            args.retry = RetryBackoff(args.retry_backoff, args.retry_backoff_max)
            args.election = _election(args)
            args.kueue_scope = kueue_scope(args)
        except ValueError as error:
            parser.error(str(error))
    if args.command == "sandbox" and not args.verbose:
        sandboxcommand.log_to_a_file(args.log_level)  # the screen: the job's status, launcher
    else:
        configure_logging(format=args.log_format, level=args.log_level)
    try:
        return _run_event_loop(_COMMANDS[args.command](args))
    except (KindLoadError, ClientConfigError) as error:
        print(f"jobcore: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
