"""Fixtures that tests in several integration modules ask for by name."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from jobcore import Client
from jobcore import Controller
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from tests.kubeflowjobs import kubeflow_controller

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def kubeflow(
    client: Client, namespace: str, control_plane: object
) -> AsyncIterator[Controller]:
    """The Kubeflow MPIJob controller for the test's namespace, Kubernetes' Job controller
    running beside it."""
    async with kubeflow_controller(client, namespace, control_plane) as controller:
        yield controller


@pytest.fixture
async def unready_node(client: Client, namespace: str) -> AsyncIterator[SimulatedNode]:
    """A node whose pods run but never become Ready unless the test says so."""
    node = SimulatedNode(
        client, name=f"unready-{namespace}"[:63], namespace=namespace, ready_after=3600
    )
    async with background(node.run()):
        await node.pods.wait_for_sync()
        yield node


@pytest.fixture(scope="session")
def agent_binary() -> str:
    """The agent as scripts/agent.sh builds it (cached by its sources' hash)."""
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "agent.sh")], capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, built.stderr
    return built.stdout.strip().splitlines()[-1]
