"""`jobcore sandbox` from a plain install: the project's wheel, without the test extra, in a
fresh virtualenv, as `pip install .` installs the distribution jobcore-k8s for a user.

The wheel is built from the files the Dockerfile builds it from, and the dependencies' come from
pytest's cache after the first run (tests/support/wheels.py, shared with the quickstart's test).
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path

import pytest

from tests.support.commands import run_to_success
from tests.support.wheels import GROUP
from tests.support.wheels import Wheels

# The first run fetches every dependency's wheel in the fixture's set-up.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600), pytest.mark.xdist_group(GROUP)]


def run(*argv: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    """Run `argv` to success; its stdout and stderr together."""
    done = run_to_success(argv, env=env, cwd=cwd, timeout=240)
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def plain_install(tmp_path_factory: pytest.TempPathFactory, fresh_install_wheels: Wheels) -> Path:
    """A fresh virtualenv holding the project as `pip install .` installs it; its bin folder."""
    venv = tmp_path_factory.mktemp("clean-install") / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    # This interpreter's pip installs into the new one: no pip of its own to bootstrap.
    pip: list[str | Path] = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python"]
    wheels = fresh_install_wheels
    run(*pip, "install", "--disable-pip-version-check", "--no-input", *wheels.found, wheels.jobcore)
    return venv / "bin"


def as_a_user(*argv: str | Path, bin_folder: Path) -> str:
    """Run `argv` to success as a user of the fresh virtualenv: outside this checkout (which
    `python -c` would import from the working directory), its bin folder first on PATH, this
    environment (KUBEBUILDER_ASSETS among it) otherwise; stdout and stderr together."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    }
    env["PATH"] = f"{bin_folder}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    return run(*argv, env=env, cwd=bin_folder.parent.parent)


def test_the_plain_install_has_no_test_extra_and_is_not_this_checkout(plain_install: Path) -> None:
    code = """
import importlib.metadata, importlib.util, jobcore
print(importlib.util.find_spec("pytest"))
print(jobcore.__file__)
print(importlib.metadata.version("jobcore-k8s"))
"""
    output = as_a_user(plain_install / "python", "-c", code, bin_folder=plain_install)
    spec, module, version = output.split()
    assert spec == "None"
    assert Path(module).is_relative_to(plain_install.parent / "lib")
    assert version == metadata.version("jobcore-k8s")  # this checkout's, installed editable


def test_jobcore_sandbox_runs_its_sample_job_from_the_plain_install(plain_install: Path) -> None:
    """The README's main command (`scripts/sandbox.sh` runs `jobcore sandbox`), as a user who
    installed the package runs it: the status shown live, while the job runs, then its end."""
    output = as_a_user(plain_install / "jobcore", "sandbox", bin_folder=plain_install)
    assert "control plane up: https://127.0.0.1:" in output, output
    assert "dashboard: http://127.0.0.1:" in output, output  # its templates are in the wheel
    assert "mpi-example: phase=Running" in output, output
    assert output.rstrip().splitlines()[-1] == "sample job finished: Succeeded", output
