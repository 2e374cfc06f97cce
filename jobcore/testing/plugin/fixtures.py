"""The async fixtures of the pytest plugin: a client, a namespace and a node per test.

Registered by `jobcore.testing.plugin` only when pytest-asyncio is installed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from jobcore import Client
from jobcore.testing._nodes.process import ProcessNode
from jobcore.testing._nodes.process import process_node_available
from jobcore.testing._nodes.simulated import SimulatedNode
from jobcore.testing._shared.background import background
from jobcore.testing._shared.eventually import eventually
from jobcore.testing._shared.jobs import temporary_namespace
from jobcore.testing._shared.required import require


@pytest_asyncio.fixture
async def client(kubeconfig_path: str) -> AsyncIterator[Client]:
    """A jobcore `Client` for the session's cluster, closed after the test."""
    client = await Client.from_kubeconfig(kubeconfig_path)
    try:
        yield client
    finally:
        await client.close()


@pytest_asyncio.fixture
async def namespace(client: Client, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A fresh namespace for one test, deleted after it.

    Without a controller manager (`control_plane.start_controller_manager()`) the deleted
    namespace stays Terminating with its objects; names are unique, so tests never collide.
    """
    async with temporary_namespace(client, request.node.name) as name:
        yield name


@pytest_asyncio.fixture
async def simulated_node(client: Client, namespace: str) -> AsyncIterator[SimulatedNode]:
    """A running `SimulatedNode` that schedules and runs the Pods of the test's namespace."""
    node = SimulatedNode(client, name=f"node-{namespace}"[:63], namespace=namespace)
    async with background(node.run()):
        await node.pods.wait_for_sync()
        yield node


@pytest_asyncio.fixture
async def process_node(client: Client, namespace: str) -> AsyncIterator[ProcessNode]:
    """A running `ProcessNode` for the test's namespace's Pods: real processes, real networks.

    Skips the test where the host cannot run one (not root, no namespaces), fails it under CI.
    """
    require(process_node_available())
    node = ProcessNode(client, name=f"proc-{namespace}"[:63], namespace=namespace)
    async with background(node.run()) as task:
        await eventually(lambda: node.pods.has_synced() or task.done(), timeout=30)
        if task.done():
            task.result()  # a failed start-up, raised here rather than hanging
        yield node
