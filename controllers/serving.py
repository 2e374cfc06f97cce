"""What a client may hold of `jobcore run`'s metrics and probe servers: the flags, and the
`ServerLimits` they make."""

from __future__ import annotations

import argparse

from controllers.apiclient import at_least
from jobcore import ServerLimits

_DEFAULT = ServerLimits()


def add_server_arguments(run: argparse.ArgumentParser) -> None:
    both = "of the metrics and probe servers"
    run.add_argument(
        "--http-header-timeout",
        type=at_least(0.001, float),
        default=_DEFAULT.header_timeout,
        metavar="SECONDS",
        help=f"close a connection {both} whose request head has not arrived in this time "
        f"(default: {_DEFAULT.header_timeout:g})",
    )
    run.add_argument(
        "--http-idle-timeout",
        type=at_least(0.001, float),
        default=_DEFAULT.idle_timeout,
        metavar="SECONDS",
        help=f"close a kept-alive connection {both} idle this long "
        f"(default: {_DEFAULT.idle_timeout:g})",
    )
    run.add_argument(
        "--http-max-header-bytes",
        type=at_least(1, int),
        default=_DEFAULT.max_header_bytes,
        metavar="BYTES",
        help=f"answer 431 to a longer request head {both} (default: {_DEFAULT.max_header_bytes})",
    )
    run.add_argument(
        "--http-max-connections",
        type=at_least(1, int),
        default=_DEFAULT.max_connections,
        metavar="N",
        help=f"open connections to each of the metrics and probe servers; one more closes the "
        f"one that has waited longest (default: {_DEFAULT.max_connections})",
    )


def server_limits(args: argparse.Namespace) -> ServerLimits:
    """The limits `add_server_arguments`' flags ask for."""
    return ServerLimits(
        header_timeout=args.http_header_timeout,
        idle_timeout=args.http_idle_timeout,
        max_header_bytes=args.http_max_header_bytes,
        max_connections=args.http_max_connections,
    )
