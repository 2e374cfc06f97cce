"""The process node runs Pods' containers as real host processes in their own namespaces."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import SECRETS
from jobcore import Client
from jobcore import Object
from jobcore.testing import ProcessNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import process_node_available
from jobcore.testing import require
from jobcore.testing import wait_for_deletion

pytestmark = pytest.mark.integration
PYTHON = sys.executable
MOUNTS = "/tmp/jobcore-process-node-test"  # mount points are made on the host, empty


@pytest.fixture(scope="module", autouse=True)
def remove_mount_points() -> Iterator[None]:
    yield
    shutil.rmtree(MOUNTS, ignore_errors=True)


@pytest.fixture
def node(process_node: ProcessNode) -> ProcessNode:
    """The plugin's node: skips without root or namespaces, and fails so under CI."""
    return process_node


def pod(namespace: str, name: str, command: list[str], **container: Any) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 2,
            "containers": [{"name": "main", "image": "ignored", "command": command, **container}],
        },
    }


async def status(client: Client, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = (await client.get(PODS, name, namespace)).get("status") or {}
    return found


def is_ready(pod_status: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod_status.get("conditions") or ()
    )


async def netns_list() -> str:
    proc = await asyncio.create_subprocess_exec(
        "ip", "netns", "list", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    return out.decode()


async def netns_pids(netns: str) -> list[int]:
    proc = await asyncio.create_subprocess_exec(
        "ip",
        "netns",
        "pids",
        netns,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await proc.communicate()
    return [int(pid) for pid in out.split()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


async def test_exit_code_and_output_of_a_failing_container(
    client: Client, namespace: str, node: ProcessNode
) -> None:
    command = ["sh", "-c", "echo hi; echo oops >&2; exit 3"]
    await client.create(
        PODS, pod(namespace, "fails", command, terminationMessagePolicy="FallbackToLogsOnError")
    )
    no_command = pod(namespace, "no-command", [])
    del no_command["spec"]["containers"][0]["command"]
    await client.create(PODS, no_command)

    async def failed(name: str) -> bool:
        return (await status(client, namespace, name)).get("phase") == "Failed"

    await eventually(lambda: failed("fails"))
    await eventually(lambda: failed("no-command"))
    found = await status(client, namespace, "no-command")
    terminated = found["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (128, "StartError")
    assert "give the container a command" in terminated["message"]
    found = await status(client, namespace, "fails")
    terminated = found["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert terminated["message"] == "hi\noops"
    assert found["podIP"].startswith("10.213.")
    assert node.logs(namespace, "fails", "main") == "hi\noops\n"


async def test_a_container_is_restarted_as_its_restart_policy_says(
    client: Client, namespace: str, node: ProcessNode, tmp_path: Path
) -> None:
    # As a real kubelet restarts Kubeflow's launcher (restartPolicy OnFailure) whose first
    # mpirun failed: the second run, finding the file the first made, succeeds.
    ran = tmp_path / "ran"
    script = f"if [ -e {ran} ]; then echo second; exit 0; fi; touch {ran}; echo first; exit 255"
    retried = pod(namespace, "retried", ["sh", "-c", script])
    retried["spec"]["restartPolicy"] = "OnFailure"
    await client.create(PODS, retried)
    always = pod(namespace, "always", ["sh", "-c", "exit 0"])
    always["spec"]["restartPolicy"] = "Always"
    await client.create(PODS, always)

    async def phase(name: str) -> str:
        return str((await status(client, namespace, name)).get("phase"))

    await eventually(lambda: _equal(phase("retried"), "Succeeded"), timeout=20)
    (container,) = (await status(client, namespace, "retried"))["containerStatuses"]
    assert container["restartCount"] == 1, container
    assert container["lastState"]["terminated"]["exitCode"] == 255, container
    assert container["state"]["terminated"]["exitCode"] == 0, container
    assert node.logs(namespace, "retried", "main") == "second\n"  # `kubectl logs`: this run's
    assert node.logs(namespace, "retried", "main", previous=True) == "first\n"

    async def restarted(times: int) -> bool:
        statuses = (await status(client, namespace, "always")).get("containerStatuses") or []
        return bool(statuses) and statuses[0]["restartCount"] >= times  # none before it ran

    await eventually(lambda: restarted(2), timeout=20)  # exit 0 too: Always restarts it
    assert await phase("always") == "Running"


async def _equal(value: Any, expected: str) -> bool:
    return bool(await value == expected)


async def test_tcp_readiness_probe_passes_only_once_the_port_listens(
    client: Client, namespace: str, node: ProcessNode
) -> None:
    serve = f"sleep 1.5; exec {PYTHON} -m http.server 8080 --bind 0.0.0.0"
    probe = {"tcpSocket": {"port": 8080}, "periodSeconds": 1}
    await client.create(PODS, pod(namespace, "web", ["sh", "-c", serve], readinessProbe=probe))

    async def running() -> bool:
        return (await status(client, namespace, "web")).get("phase") == "Running"

    await eventually(running)
    assert not is_ready(await status(client, namespace, "web")), "ready before listening"

    async def ready() -> bool:
        return is_ready(await status(client, namespace, "web"))

    await eventually(ready, timeout=10)
    ip = (await status(client, namespace, "web"))["podIP"]
    _, writer = await asyncio.open_connection(ip, 8080)  # listening for real
    writer.close()


async def test_secret_and_config_map_volumes_with_content_and_modes(
    client: Client, namespace: str, node: ProcessNode
) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": namespace},
        "data": {"token": base64.b64encode(b"s3cret").decode(), "other": ""},
    }
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": namespace},
        "data": {"app.conf": "level=debug\n"},
    }
    await client.create(SECRETS, secret)
    await client.create(CONFIGMAPS, config)
    check = (
        f"cat {MOUNTS}/secret/key; echo; stat -c %a {MOUNTS}/secret/key;"
        f" cat {MOUNTS}/config/app.conf; stat -c %a {MOUNTS}/config/app.conf;"
        f" ls {MOUNTS}/secret; touch {MOUNTS}/secret/new 2>/dev/null || echo read-only"
    )
    manifest = pod(
        namespace,
        "volumes",
        ["sh", "-c", check],
        volumeMounts=[
            {"name": "s", "mountPath": f"{MOUNTS}/secret"},
            {"name": "c", "mountPath": f"{MOUNTS}/config"},
        ],
    )
    manifest["spec"]["volumes"] = [
        {
            "name": "s",
            "secret": {
                "secretName": "creds",
                "defaultMode": 0o600,
                "items": [{"key": "token", "path": "key", "mode": 0o400}],
            },
        },
        {"name": "c", "configMap": {"name": "settings", "defaultMode": 0o640}},
    ]
    await client.create(PODS, manifest)

    async def succeeded() -> bool:
        return (await status(client, namespace, "volumes")).get("phase") == "Succeeded"

    await eventually(succeeded)
    output = node.logs(namespace, "volumes", "main").splitlines()
    assert output == ["s3cret", "400", "level=debug", "640", "key", "read-only"]


async def test_pods_resolve_each_other_by_fqdn_once_ready_and_connect(
    client: Client, namespace: str, node: ProcessNode
) -> None:
    # Each serves on 8000, waits until its peer resolves, then connects to it by name.
    script = (
        f"{PYTHON} -m http.server 8000 >/dev/null 2>&1 & "
        'peer="$PEER.group.$NS.svc.cluster.local"; hostname; '
        'until getent hosts "$peer"; do sleep 0.1; done; '
        f'{PYTHON} -c "import socket, sys; socket.create_connection((sys.argv[1], 8000), 5)" '
        '"$peer" && echo connected; wait'
    )
    for name, peer in (("a", "b"), ("b", "a")):
        manifest = pod(
            namespace,
            name,
            ["sh", "-c", script],
            env=[{"name": "PEER", "value": peer}, {"name": "NS", "value": namespace}],
            readinessProbe={"tcpSocket": {"port": 8000}, "periodSeconds": 1},
        )
        manifest["spec"].update(hostname=name, subdomain="group")
        await client.create(PODS, manifest)

    def both_connected() -> bool:
        try:
            return all("connected" in node.logs(namespace, n, "main") for n in ("a", "b"))
        except KeyError:  # not bound to the node yet
            return False

    await eventually(both_connected, timeout=15)
    for name, peer in (("a", "b"), ("b", "a")):
        peer_ip = (await status(client, namespace, peer))["podIP"]
        lines = node.logs(namespace, name, "main").splitlines()
        assert lines[0] == name  # its own hostname
        fqdn = f"{peer}.group.{namespace}"
        names = [f"{fqdn}.svc.cluster.local", f"{fqdn}.svc", fqdn, f"{peer}.group", peer]
        assert lines[1].split() == [peer_ip, *names]


async def test_deleting_a_running_pod_kills_it_and_removes_its_netns(
    client: Client, namespace: str, node: ProcessNode
) -> None:
    created = await client.create(PODS, pod(namespace, "sleeper", ["sleep", "1000"]))
    netns = "jc-" + created["metadata"]["uid"].replace("-", "")[:8]

    async def started() -> bool:
        statuses = (await status(client, namespace, "sleeper")).get("containerStatuses") or []
        return bool(statuses) and "containerID" in statuses[0]

    await eventually(started)
    found = await status(client, namespace, "sleeper")
    pid = int(found["containerStatuses"][0]["containerID"].removeprefix("process://"))
    assert alive(pid)
    assert netns in await netns_list()

    await client.delete(PODS, "sleeper", namespace)

    await wait_for_deletion(client, PODS, namespace, "sleeper", timeout=10)
    assert not alive(pid)
    assert netns not in await netns_list()
    assert "sleep" not in node.logs(namespace, "sleeper", "main")  # logs outlive the pod


async def test_stopping_the_node_leaves_no_process_or_netns_behind(
    client: Client, namespace: str
) -> None:
    require(process_node_available())
    node = ProcessNode(client, name=f"stop-{namespace}"[:63], namespace=namespace)
    # The setsid'd sleep leaves the container's process group: only the netns finds it.
    command = ["sh", "-c", "setsid sleep 1001 & exec sleep 1002"]
    async with background(node.run()):
        created = await client.create(PODS, pod(namespace, "left", command))
        netns = "jc-" + created["metadata"]["uid"].replace("-", "")[:8]

        async def both_running() -> bool:
            return len(await netns_pids(netns)) == 2

        await eventually(both_running, timeout=10)
        pids = await netns_pids(netns)
    assert [pid for pid in pids if alive(pid)] == []
    assert netns not in await netns_list()
    assert node.logs(namespace, "left", "main") == ""


async def test_a_pod_recreated_under_the_same_name_runs_afresh(
    client: Client, namespace: str, node: ProcessNode
) -> None:
    old = await client.create(PODS, pod(namespace, "again", ["sleep", "1000"]))

    async def running() -> bool:
        return (await status(client, namespace, "again")).get("phase") == "Running"

    await eventually(running)
    await client.delete(PODS, "again", namespace, grace_period_seconds=0)
    new = await client.create(PODS, pod(namespace, "again", ["sh", "-c", "echo new; exit 0"]))
    assert new["metadata"]["uid"] != old["metadata"]["uid"]

    async def succeeded() -> bool:
        return (await status(client, namespace, "again")).get("phase") == "Succeeded"

    # The old pod's last status write (killed: 137) must not land on its namesake.
    await eventually(succeeded, timeout=10)
    assert node.logs(namespace, "again", "main") == "new\n"
