"""The testing kit and the `jobcore` program import without pytest, which only the test extra
installs: `jobcore sandbox` runs the kit's control plane and nodes from a plain install."""

from __future__ import annotations

import subprocess
import sys

import pytest

from jobcore.testing import require

# A meta-path finder that refuses pytest and its plugins, as an environment without them would.
BLOCK_PYTEST = """
import sys

class NoPytest:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pytest", "_pytest", "pytest_asyncio"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoPytest())
"""


def run_without_pytest(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_PYTEST + code], capture_output=True, text=True, check=False
    )


def test_the_blocker_blocks_pytest() -> None:
    ran = run_without_pytest("import pytest")
    assert "No module named 'pytest'" in ran.stderr


def test_the_kit_and_the_sandbox_import_without_pytest() -> None:
    code = """
import jobcore.testing
import controllers.cli
import controllers.sandbox.local
import controllers.sandbox.cluster
jobcore.testing.require(None)
print(sorted(name for name in sys.modules if "pytest" in name))
"""
    ran = run_without_pytest(code)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"


def test_the_sandbox_command_answers_without_pytest() -> None:
    ran = run_without_pytest("import controllers.cli; controllers.cli.main(['sandbox', '--help'])")
    assert ran.returncode == 0, ran.stderr
    assert "--keep" in ran.stdout


def test_require_skips_a_test_whose_prerequisite_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no frobnicator here"):
        require("no frobnicator here")


def test_require_fails_the_test_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="cannot run under CI: no frobnicator"):
        require("no frobnicator")
