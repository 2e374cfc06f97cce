"""Fixtures shared by tests in more than one folder of tests/."""

from __future__ import annotations

import pytest

from controllers.sandbox.frameworks import cache_folder
from tests.support import wheels


@pytest.fixture(scope="session")
def fresh_install_wheels(tmp_path_factory: pytest.TempPathFactory) -> wheels.Wheels:
    """jobcore's and the quickstart kind's wheels, built once per test process (mark the tests
    that use them `xdist_group(wheels.GROUP)`), and their dependencies', kept outside the
    repository ($JOBCORE_WHEELS, else ~/.cache/jobcore/wheels), so a fresh clone finds them."""
    cache = cache_folder("JOBCORE_WHEELS", "wheels")
    cache.mkdir(parents=True, exist_ok=True)
    return wheels.build(tmp_path_factory.mktemp("fresh-install"), cache)
