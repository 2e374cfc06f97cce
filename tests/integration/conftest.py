"""Fixtures that tests in several integration modules ask for by name."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from jobcore import Client
from jobcore import Controller
from jobcore.jobs import AgentSource
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import job_controller
from tests.support.kubeflowjobs import kubeflow_controller

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
def agent_source() -> AgentSource:
    """jobcore's agent as `scripts/agent.sh` builds it (cached by its sources' hash), for a
    process node, which ignores images: each pod's init container runs the host's agent."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "agent.sh"
    built = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    return AgentSource(image="jobcore:test", path=built.stdout.strip().splitlines()[-1])


@pytest.fixture
async def agent_controller(
    request: pytest.FixtureRequest, client: Client, namespace: str, agent_source: AgentSource
) -> AsyncIterator[Controller]:
    """The controller of the test module's `KIND` for the test's namespace, giving its jobs'
    pods jobcore's agent (`agent_source`); jobs over ssh ignore it."""
    kind = request.module.KIND
    async with job_controller(client, kind, namespace=namespace, agent=agent_source) as controller:
        yield controller
