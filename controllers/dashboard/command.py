"""`jobcore dashboard`: serve the dashboard until interrupted.

Locally it reads with the user's kubeconfig, so it shows what their RBAC lets them read, and
binds 127.0.0.1; in a cluster (the optional Deployment) it reads with its ServiceAccount and
is reached with `kubectl port-forward`.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import structlog

from controllers.apiclient import add_client_arguments
from controllers.apiclient import client_from
from controllers.dashboard.server import serve
from controllers.dashboard.view import ClusterView
from controllers.kinds import installed_kinds
from controllers.kinds import kind_names

DEFAULT_PORT = 8080
_log = structlog.get_logger("jobcore.dashboard")


def add_parser(commands: Any) -> None:
    """The `dashboard` subcommand of the CLI's `commands` (argparse's subparsers)."""
    dashboard = commands.add_parser("dashboard", help="a read-only web view of the jobs, live")
    add_client_arguments(dashboard)
    dashboard.add_argument(
        "--address", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)"
    )
    dashboard.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"default: {DEFAULT_PORT}; 0: any free"
    )
    dashboard.add_argument(
        "--namespace", "-n", help="show this namespace only (default: every namespace)"
    )
    dashboard.add_argument("--kinds", help="comma-separated kinds (default: all installed)")
    dashboard.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        help="a host name the pages may be reached by besides loopback ones (repeatable)",
    )


async def dashboard(args: argparse.Namespace) -> int:
    kinds = installed_kinds(kind_names(args.kinds))
    async with await client_from(args) as client:
        view = ClusterView(client, kinds, args.namespace)
        async with serve(view, args.address, args.port, allowed_hosts=args.allowed_host) as url:
            print(f"jobcore dashboard: {url}", flush=True)
            _log.info("serving the dashboard", url=url, kinds=[k.name for k in kinds])
            await asyncio.Event().wait()
    return 0
