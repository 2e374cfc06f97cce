"""The `jobcore` command as users run it, for the tests that start it as a process or call its
`main` in theirs, or build the project as a user's install does."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import pytest
import structlog

from controllers import cli


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


@contextlib.contextmanager
def kept_logging() -> Iterator[None]:
    """`cli.main` configures logging for the process: put back what the test run had."""
    root = logging.getLogger()
    handlers, level, config = list(root.handlers), root.level, structlog.get_config()
    try:
        yield
    finally:
        root.handlers, root.level = handlers, level
        structlog.configure(**config)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`jobcore --log-format json ARGV` in this process: its exit code, stdout and stderr."""
    with kept_logging():
        code = cli.main(["--log-format", "json", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_to_success(
    argv: Sequence[str | Path],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Run a command to its end; the test fails showing all it wrote unless it succeeded."""
    command = [str(arg) for arg in argv]
    done = subprocess.run(
        command, cwd=cwd, env=env, timeout=timeout, capture_output=True, text=True, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{output}"
    return done


PROJECT = Path(__file__).resolve().parents[2]


def dockerfile_sources() -> list[str]:
    """What the Dockerfile copies to build the wheel (its COPY lines but `--from`'s), as
    scripts/images.sh reads them: the package is built from these and nothing else."""
    sources: list[str] = []
    for line in (PROJECT / "Dockerfile").read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not words[1].startswith("--"):
            sources += words[1:-1]
    return sources


def copy_project(dest: Path) -> Path:
    """`dest`, holding what the project's wheel is built from (`dockerfile_sources`), without
    caches; built there, the wheel picks up no leftover of a build in the checkout."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in dockerfile_sources():
        if (PROJECT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(PROJECT / name, dest / name, ignore=ignore)
        else:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(PROJECT / name, dest / name)
    return dest
