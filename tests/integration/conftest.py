"""Fixtures that tests in several integration modules ask for by name."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from jobcore import Client
from jobcore import Controller
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from tests.kubeflowjobs import kubeflow_controller


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
