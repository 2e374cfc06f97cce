"""Fixtures shared by tests in more than one folder of tests/."""

from __future__ import annotations

import pytest

from tests import wheels


@pytest.fixture(scope="session")
def fresh_install_wheels(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> wheels.Wheels:
    """jobcore's and the quickstart kind's wheels and their dependencies', built once per test
    process (mark the tests that use them `xdist_group(wheels.GROUP)`)."""
    assert pytestconfig.cache is not None, "needs pytest's cache: drop -p no:cacheprovider"
    cache = pytestconfig.cache.mkdir("quickstart-wheels")
    return wheels.build(tmp_path_factory.mktemp("fresh-install"), cache)
