"""How `jobcore run` reaches the API server: its flags, and the client they make."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

from kubernetes_asyncio.config import ConfigException

from jobcore import DEFAULT_MAX_CONNECTIONS
from jobcore import Client

Number = TypeVar("Number", int, float)

DEFAULT_QPS = 500.0
DEFAULT_BURST = 3000
"""`jobcore run`'s client-side rate limit. The burst covers the storm of 200 jobs submitted at
once in `benchmarks/bench_scale.py` (up to about 2,600 writes until all workers exist), so the
benchmark's figures do not depend on it; 500 a second caps a runaway. client-go's 5 and 10
would stretch those 200 jobs over minutes."""


def at_least(low: Number, kind: Callable[[str], Number]) -> Callable[[str], Number]:
    """An argparse type: `kind(text)`, refused below `low`."""

    def parse(text: str) -> Number:
        value = kind(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low:g}, not {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names it in "invalid float value"
    return parse


def add_client_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument("--kubeconfig", help="default: in-cluster config, else $KUBECONFIG")
    run.add_argument(
        "--api-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        help="connections to the API server at most (each holds about 0.3 MB)",
    )
    run.add_argument(
        "--kube-api-qps",
        type=at_least(0.0, float),
        default=DEFAULT_QPS,
        help=f"requests per second to the API server at most, past the burst (default: "
        f"{DEFAULT_QPS:g}; 0: no limit)",
    )
    run.add_argument(
        "--kube-api-burst",
        type=at_least(1, int),
        default=DEFAULT_BURST,
        help=f"requests sent at once before --kube-api-qps spaces them (default: {DEFAULT_BURST})",
    )


class ClientConfigError(Exception):
    """The kubeconfig (or the in-cluster configuration) could not be read."""


async def client_from(args: argparse.Namespace) -> Client:
    """The client `add_client_arguments`' flags ask for; ClientConfigError, saying where it
    looked and why, when its configuration cannot be read."""
    options = {
        "max_connections": args.api_connections,
        "qps": args.kube_api_qps or None,
        "burst": args.kube_api_burst,
    }
    where = args.kubeconfig or "the in-cluster configuration, else $KUBECONFIG or ~/.kube/config"
    try:
        if args.kubeconfig:
            return await Client.from_kubeconfig(args.kubeconfig, **options)
        return await Client.from_environment(**options)
    except (ConfigException, OSError) as error:
        raise ClientConfigError(f"cannot read {where}: {error}") from error
