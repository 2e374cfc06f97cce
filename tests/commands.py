"""The `jobcore` command as users run it, for the tests that start it as a process."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping


async def start_jobcore(
    *args: str, env: Mapping[str, str] | None = None
) -> asyncio.subprocess.Process:
    """`jobcore ARGS` in a subprocess, unbuffered, its stderr merged into its stdout (a pipe);
    `env` added to this process' environment."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "controllers.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )


LOOPBACK_SERVERS = (
    "--metrics-bind-address",
    "127.0.0.1:0",
    "--health-probe-bind-address",
    "127.0.0.1:0",
)
"""`jobcore run`'s metrics and probe servers on free loopback ports: tests never share one."""


def run_args(kubeconfig: str, namespace: str) -> list[str]:
    """`run` and its arguments for a controller of `namespace` that uses `kubeconfig`."""
    return ["run", "--kubeconfig", kubeconfig, "--namespace", namespace, *LOOPBACK_SERVERS]
