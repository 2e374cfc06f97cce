"""The wheels a fresh virtualenv installs from, for the tests that install this project as its
users do (tests/integration/cli/test_clean_install.py, and the kind author's quickstart in
tests/docs/test_quickstart.py): jobcore's and the quickstart kind's, built once per test process
from the files they are built from, and every dependency's, kept in a cache outside the
repository (tests/conftest.py's `fresh_install_wheels`) for as long as neither pyproject.toml
changes, so only the first run needs pip's index.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobcore.testing import require
from tests.support.commands import PROJECT
from tests.support.commands import copy_project
from tests.support.commands import run_to_success

KIND = PROJECT / "docs" / "examples" / "sleepjob"
"""The quickstart's kind package (docs/jobkinds.md)."""
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
GROUP = "fresh-virtualenv"
"""The xdist group of the tests that install the wheels: on one worker, they are built once."""


def project(pyproject: Path) -> dict[str, Any]:
    """The `[project]` table of a pyproject.toml."""
    table: dict[str, Any] = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return table


DISTRIBUTION = str(project(PROJECT / "pyproject.toml")["name"])


@dataclass(frozen=True)
class Wheels:
    """jobcore's wheel, the quickstart kind's and the copy of its sources it was built from,
    and pip's options that find them and every dependency's without an index."""

    jobcore: Path
    kind: Path
    kind_sources: Path
    found: list[str]


def build(folder: Path, cache: Path) -> Wheels:
    """Build jobcore's and the kind's wheels in `folder` (each from a copy of its sources), the
    dependencies' in `cache` unless there already."""
    jobcore = copy_project(folder / "jobcore")
    kind = folder / "sleepjob"
    shutil.copytree(KIND, kind, ignore=shutil.ignore_patterns("__pycache__", ".*_cache"))
    wheels = folder / "wheels"
    run_to_success([*PIP, "wheel", "--no-deps", "--wheel-dir", wheels, jobcore, kind])
    (jobcore_wheel,) = wheels.glob(f"{DISTRIBUTION.replace('-', '_')}-*.whl")
    (kind_wheel,) = wheels.glob("sleepjob-*.whl")
    house = _dependency_wheels(cache, jobcore_wheel, kind_wheel)
    found = ["--no-index", "--find-links", str(wheels), "--find-links", str(house)]
    return Wheels(jobcore_wheel, kind_wheel, kind, found)


def _dependency_wheels(cache: Path, jobcore: Path, kind: Path) -> Path:
    """A folder of wheels for every dependency of jobcore and of the kind's test extra, made
    once per pair of pyproject.toml files and Python version."""
    key = hashlib.sha256(sys.version.encode())
    for pyproject in (PROJECT / "pyproject.toml", KIND / "pyproject.toml"):
        key.update(pyproject.read_bytes())
    house = cache / key.hexdigest()[:16]
    if house.is_dir():
        return house
    partial = cache / "partial"
    shutil.rmtree(partial, ignore_errors=True)
    fetched = subprocess.run(
        [*PIP, "wheel", "--wheel-dir", str(partial), str(jobcore), f"{kind}[test]"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if fetched.returncode:
        tail = "\n".join(fetched.stderr.strip().splitlines()[-5:])
        require(f"pip could not fetch the quickstart's dependencies: {tail}")
    for wheel in (jobcore, kind):  # built afresh on each run
        (partial / wheel.name).unlink()
    for stale in cache.iterdir():
        if stale != partial:
            shutil.rmtree(stale)
    partial.rename(house)
    return house
