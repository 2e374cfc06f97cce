"""The kit's plugin marks every test `xdist_group` (see jobcore.testing.plugin), so it declares
the mark where pytest-xdist, which declares it too, is not installed: a kind's own tests run
without it, under `--strict-markers` as well, with no `Unknown pytest.mark.xdist_group`."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_a_kinds_tests_run_without_pytest_xdist_under_strict_markers(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_a_kind() -> None:\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:xdist", "-p", "no:jobcore", "-p", "jobcore.testing.plugin", "--strict-markers"
    )
    result.assert_outcomes(passed=1)
    assert "xdist_group" not in result.stdout.str()
