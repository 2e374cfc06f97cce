"""docs/jobkinds.md's quickstart, done as a kind author would: the example kind package the docs
show (docs/examples/sleepjob, its pyproject, modules and tests) and this repository's jobcore,
both built as wheels and installed into a fresh virtualenv, not editable; there the kind's own
tests pass against a real API server, `mypy` (strict, from the package's pyproject) passes, and
`jobcore kinds` prints what the quickstart shows.

The dependencies' wheels are kept in pytest's cache (`.pytest_cache/d/quickstart-wheels`) for
as long as neither pyproject.toml changes, so only the first run needs pip's index.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from jobcore.testing import require
from tests.commands import copy_project
from tests.commands import run_to_success
from tests.docs.shown import DOCS
from tests.docs.shown import EXAMPLES

REPO = DOCS.parent
KIND = EXAMPLES / "sleepjob"
_PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
_SUMMARY = re.compile(r"\d+ passed(, \d+ warnings?)? in [\d.]+s( \([\d:]+\))?")


def _run(
    argv: Sequence[str | Path], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> str:
    """Run a command to success; its standard output."""
    return run_to_success(argv, cwd=cwd, env=env).stdout


def _project(pyproject: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return project


def _dependency_wheels(cache: Path, local_wheels: Sequence[Path], kind: Path) -> Path:
    """A folder of wheels for every dependency of jobcore and of the kind's test extra, made
    once per pair of pyproject.toml files and Python version."""
    key = hashlib.sha256(sys.version.encode())
    for pyproject in (REPO / "pyproject.toml", KIND / "pyproject.toml"):
        key.update(pyproject.read_bytes())
    house = cache / key.hexdigest()[:16]
    if house.is_dir():
        return house
    partial = cache / "partial"
    shutil.rmtree(partial, ignore_errors=True)
    fetched = subprocess.run(
        [*_PIP, "wheel", "--wheel-dir", str(partial), *map(str, local_wheels), f"{kind}[test]"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if fetched.returncode:
        tail = "\n".join(fetched.stderr.strip().splitlines()[-5:])
        require(f"pip could not fetch the quickstart's dependencies: {tail}")
    for wheel in local_wheels:  # built afresh on each run
        (partial / wheel.name).unlink()
    for stale in cache.iterdir():
        if stale != partial:
            shutil.rmtree(stale)
    partial.rename(house)
    return house


def _shown_kinds_output() -> str:
    """The quickstart's `jobcore kinds` sample: the lines after `$ jobcore kinds` of the block that
    lists sleepjob, unindented."""
    page = (DOCS / "jobkinds.md").read_text(encoding="utf-8")
    for block in re.findall(r"^    \$ jobcore kinds\n((?:    .*\n)+)", page, re.M):
        if "sleepjob" in block:
            return "".join(line[4:] + "\n" for line in block.splitlines())
    raise AssertionError("docs/jobkinds.md shows no `jobcore kinds` that lists sleepjob")


@pytest.mark.timeout(900)
def test_the_quickstart_kind_passes_its_tests_in_a_fresh_virtualenv(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    assert pytestconfig.cache is not None, "needs pytest's cache: drop -p no:cacheprovider"
    distribution = str(_project(REPO / "pyproject.toml")["name"])
    # The quickstart's package depends on this repository's distribution, by its name on PyPI.
    assert _project(KIND / "pyproject.toml")["dependencies"] == [distribution]
    jobcore = copy_project(tmp_path / "jobcore")
    kind = tmp_path / "sleepjob"
    shutil.copytree(KIND, kind, ignore=shutil.ignore_patterns("__pycache__", ".*_cache"))
    wheels = tmp_path / "wheels"
    _run([*_PIP, "wheel", "--no-deps", "--wheel-dir", wheels, jobcore, kind])
    (jobcore_wheel,) = wheels.glob(f"{distribution.replace('-', '_')}-*.whl")
    (kind_wheel,) = wheels.glob("sleepjob-*.whl")
    house = _dependency_wheels(
        pytestconfig.cache.mkdir("quickstart-wheels"), [jobcore_wheel, kind_wheel], kind_wheel
    )

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    # The author's shell, with the virtualenv active; KUBEBUILDER_ASSETS (and CI) pass through.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    env |= {"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}"}
    found: list[str | Path] = ["--no-index", "--find-links", wheels, "--find-links", house]
    installing = [*_PIP, "--python", venv / "bin" / "python", "install", "--no-compile", *found]
    _run([*installing, "sleepjob[test]"], env=env)

    tested = _run(["pytest", "-p", "no:cacheprovider"], cwd=kind, env=env)
    assert _SUMMARY.fullmatch(tested.strip().splitlines()[-1].strip("= ")), tested
    assert "Success: no issues found" in _run(["mypy", "src", "tests"], cwd=kind, env=env)
    assert _run(["jobcore", "kinds"], cwd=tmp_path, env=env) == _shown_kinds_output()
