"""Pod logs through the real API server's `pods/log`, served by the kit's nodes as a kubelet."""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path

import pytest

from jobcore import PODS
from jobcore import ApiError
from jobcore import Client
from jobcore import NotFoundError
from jobcore import Object
from jobcore.testing import ProcessNode
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import require

pytestmark = pytest.mark.integration


def pod(namespace: str, name: str, restart: str, command: list[str] | None = None) -> Object:
    container: Object = {"name": "main", "image": "busybox"}
    if command:
        container["command"] = command
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"restartPolicy": restart, "containers": [container]},
    }


async def running_on(node: SimulatedNode | ProcessNode, namespace: str, name: str) -> None:
    """Until the node itself sees its container running (it answers for logs from that)."""

    def running() -> bool:
        found = node.pods.get(name, namespace)
        statuses = ((found or {}).get("status") or {}).get("containerStatuses") or ()
        return any("running" in s["state"] for s in statuses)

    await eventually(running)


async def collect(lines: list[str], follower: AsyncIterator[str]) -> None:
    async for line in follower:
        lines.append(line)


@pytest.fixture
def kubectl(kubeconfig_path: str) -> Callable[..., Awaitable[str]]:
    """Run the assets folder's kubectl with the control plane's kubeconfig; its output."""
    binary = Path(os.environ.get("KUBEBUILDER_ASSETS", ""), "kubectl")
    require(None if binary.is_file() else "needs kubectl from KUBEBUILDER_ASSETS")
    return functools.partial(run, str(binary), "--kubeconfig", kubeconfig_path)


async def run(*argv: str) -> str:
    process = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE)
    out, _ = await process.communicate()
    assert process.returncode == 0
    return out.decode()


async def test_a_simulated_containers_log_read_tailed_followed_and_previous(
    client: Client,
    namespace: str,
    simulated_node: SimulatedNode,
    kubectl: Callable[..., Awaitable[str]],
) -> None:
    node = simulated_node
    await client.create(PODS, pod(namespace, "launcher", "OnFailure"))
    await client.create(PODS, pod(namespace, "pulling", "Never"))
    await running_on(node, namespace, "launcher")
    await node.set_waiting(namespace, "pulling")
    node.write_log(namespace, "launcher", "main", "one\ntwo\nthree\n")

    assert await client.pod_log("launcher", namespace) == "one\ntwo\nthree\n"
    assert await client.pod_log("launcher", namespace, container="main", tail_lines=1) == "three\n"
    assert await client.pod_log("launcher", namespace, limit_bytes=6) == "one\ntw"
    with pytest.raises(NotFoundError):
        await client.pod_log("nobody", namespace)
    with pytest.raises(ApiError) as waiting:
        await client.pod_log("pulling", namespace)
    assert waiting.value.status == 400
    assert "waiting to start" in waiting.value.message

    # Following: a line written later, an endless line cut at 64 KiB, the end of the run.
    lines: list[str] = []
    follower = asyncio.create_task(
        collect(lines, client.follow_pod_log("launcher", namespace, tail_lines=1))
    )
    await eventually(lambda: lines == ["three"])
    node.write_log(namespace, "launcher", "main", "four\n" + "x" * 100_000 + "\nfive\n")
    await eventually(lambda: len(lines) == 4)
    assert lines[1] == "four" and lines[2] == "x" * 65536 and lines[3] == "five"
    await node.fail(namespace, "launcher", log="exiting\n")  # OnFailure: it restarts
    async with asyncio.timeout(5):
        await follower  # this run's log ends with it
    assert lines[4:] == ["exiting"]

    node.write_log(namespace, "launcher", "main", "again\n")
    assert await client.pod_log("launcher", namespace) == "again\n"
    previous = await client.pod_log("launcher", namespace, previous=True)
    assert previous.startswith("one\ntwo\nthree\nfour\n") and previous.endswith("five\nexiting\n")
    assert await kubectl("-n", namespace, "logs", "launcher") == "again\n"
    assert await kubectl("-n", namespace, "logs", "launcher", "--tail=1") == "again\n"

    lines.clear()
    follower = asyncio.create_task(collect(lines, client.follow_pod_log("launcher", namespace)))
    await eventually(lambda: lines == ["again"])
    await node.succeed(namespace, "launcher")
    async with asyncio.timeout(5):
        await follower  # the pod ended: so does the stream
    assert lines == ["again"]


async def test_a_process_containers_real_output(
    client: Client, namespace: str, process_node: ProcessNode
) -> None:
    script = "echo first; sleep 1; echo second"
    await client.create(PODS, pod(namespace, "echo", "Never", ["sh", "-c", script]))
    await running_on(process_node, namespace, "echo")
    lines: list[str] = []
    async with asyncio.timeout(10):
        await collect(lines, client.follow_pod_log("echo", namespace))
    assert lines == ["first", "second"]
    assert await client.pod_log("echo", namespace) == "first\nsecond\n"


async def test_a_node_stops_at_once_while_a_log_is_followed(client: Client, namespace: str) -> None:
    node = SimulatedNode(client, name=f"stopping-{namespace}"[:63], namespace=namespace)
    async with background(node.run()):
        await node.pods.wait_for_sync()
        await client.create(PODS, pod(namespace, "quiet", "Never"))
        await running_on(node, namespace, "quiet")
        follower = asyncio.create_task(collect([], client.follow_pod_log("quiet", namespace)))
        await asyncio.sleep(0.5)  # the follower is waiting for more
        stopping = time.monotonic()
    assert time.monotonic() - stopping < 5
    async with asyncio.timeout(5):
        await follower  # ended with the node's server
