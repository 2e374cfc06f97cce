"""Fixtures that several modules of the job layer's integration tests ask for by name."""

from __future__ import annotations

import pytest

from jobcore.testing import SimulatedNode
from tests.support.launchers import LAUNCHER


@pytest.fixture
def launchers_succeed(simulated_node: SimulatedNode) -> None:
    """The test's simulated node ends every launcher 0.2 s after it starts, with exit code 0, so
    each job there Succeeds: for tests that want nothing else of the node."""
    simulated_node.when(LAUNCHER, exit_code=0, after=0.2)
