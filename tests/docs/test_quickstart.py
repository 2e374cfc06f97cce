"""docs/jobkinds.md's quickstart, done as a kind author would: the example kind package the docs
show (docs/examples/sleepjob, its pyproject, modules and tests) and this repository's jobcore,
both built as wheels and installed into a fresh virtualenv, not editable; there the kind's own
tests pass against a real API server with no warning (the kit's marks need no pytest-xdist),
`mypy` (strict, from the package's pyproject) passes, and `jobcore kinds` prints what the
quickstart shows.

The wheels, and the dependencies' kept in pytest's cache, are tests/support/wheels.py's, which
the plain install's test installs too.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import pytest

from controllers.sandbox.frameworks import cache_folder
from tests.docs.shown import DOCS
from tests.support.commands import run_to_success
from tests.support.wheels import DISTRIBUTION
from tests.support.wheels import GROUP
from tests.support.wheels import KIND
from tests.support.wheels import PIP
from tests.support.wheels import Wheels
from tests.support.wheels import project

pytestmark = pytest.mark.xdist_group(GROUP)
_SUMMARY = re.compile(r"\d+ passed in [\d.]+s( \([\d:]+\))?")


def _run(
    argv: Sequence[str | Path], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> str:
    """Run a command to success; its standard output."""
    return run_to_success(argv, cwd=cwd, env=env).stdout


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
    tmp_path: Path, fresh_install_wheels: Wheels
) -> None:
    # The quickstart's package depends on this repository's distribution, by its name on PyPI.
    assert project(KIND / "pyproject.toml")["dependencies"] == [DISTRIBUTION]
    kind = fresh_install_wheels.kind_sources

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    # The author's shell, with the virtualenv active; KUBEBUILDER_ASSETS (and CI) pass through.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    env |= {"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}"}
    installing: list[str | Path] = [*PIP, "--python", venv / "bin" / "python", "install"]
    installing += ["--no-compile", *fresh_install_wheels.found]
    _run([*installing, "sleepjob[test]"], env=env)

    tested = _run(["pytest", "-p", "no:cacheprovider"], cwd=kind, env=env)
    assert _SUMMARY.fullmatch(tested.strip().splitlines()[-1].strip("= ")), tested
    # mypy's cache kept between runs (it checks each module's hash): the fresh virtualenv's
    # jobcore and dependencies are checked again only when they change.
    typing_env = env | {"MYPY_CACHE_DIR": str(cache_folder("JOBCORE_MYPY", "mypy-quickstart"))}
    assert "Success: no issues found" in _run(["mypy", "src", "tests"], cwd=kind, env=typing_env)
    assert _run(["jobcore", "kinds"], cwd=tmp_path, env=env) == _shown_kinds_output()
