"""What a client may hold of `jobcore run`'s metrics and probe servers: the flags, and the
`ServerLimits` they make."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from controllers.apiclient import at_least
from jobcore import ServerLimits

_DEFAULT = ServerLimits()
_BOTH = "of the metrics and probe servers"
_FLAGS: tuple[tuple[str, str, Callable[[str], float], str], ...] = (
    (
        "header_timeout",
        "SECONDS",
        at_least(0.001, float),
        f"close a connection {_BOTH} whose request head has not arrived in this time",
    ),
    (
        "idle_timeout",
        "SECONDS",
        at_least(0.001, float),
        f"close a kept-alive connection {_BOTH} idle this long",
    ),
    (
        "max_header_bytes",
        "BYTES",
        at_least(1, int),
        f"answer 431 to a longer request head {_BOTH}",
    ),
    (
        "max_connections",
        "N",
        at_least(1, int),
        "open connections to each of the metrics and probe servers; one more closes the one "
        "that has waited longest",
    ),
)
"""One `--http-<field>` flag per `ServerLimits` field: its metavar, type and help."""


def add_server_arguments(run: argparse.ArgumentParser) -> None:
    for field, metavar, kind, text in _FLAGS:
        default = getattr(_DEFAULT, field)
        run.add_argument(
            f"--http-{field.replace('_', '-')}",
            type=kind,
            default=default,
            metavar=metavar,
            help=f"{text} (default: {default:g})",
        )


def server_limits(args: argparse.Namespace) -> ServerLimits:
    """The limits `add_server_arguments`' flags ask for."""
    return ServerLimits(**{field: getattr(args, f"http_{field}") for field, *_ in _FLAGS})
