"""The test control plane: real etcd + kube-apiserver, restarts, etcd access, users, cleanup."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio import config
from kubernetes_asyncio.client.exceptions import ApiException

from jobcore.testing import ControlPlane
from jobcore.testing import ControlPlaneError
from jobcore.testing._controlplane.binaries import platform_suffix
from jobcore.testing._controlplane.k3s import docker_available
from jobcore.testing._controlplane.k3s import start_k3s

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]


class Started(NamedTuple):
    plane: ControlPlane
    alice: str  # token of a user added before start, bound to no role


@pytest.fixture(scope="module")
def started() -> Iterator[Started]:
    """One control plane for the module, started on a private loop as the plugin does."""
    plane = ControlPlane()
    alice = plane.add_user("alice", ["testers"])
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(plane.start())
        yield Started(plane, alice)
    finally:
        loop.run_until_complete(plane.stop())
        loop.close()


@contextlib.asynccontextmanager
async def core_api(kubeconfig: str) -> AsyncIterator[client.CoreV1Api]:
    api = await config.new_client_from_config(config_file=kubeconfig)
    async with api:
        yield client.CoreV1Api(api)


def configmap(name: str, owner: client.V1ObjectMeta | None = None) -> client.V1ConfigMap:
    metadata = client.V1ObjectMeta(name=name)
    if owner is not None:
        metadata.owner_references = [
            client.V1OwnerReference(
                api_version="v1", kind="ConfigMap", name=owner.name, uid=owner.uid
            )
        ]
    return client.V1ConfigMap(metadata=metadata, data={"value": "1"})


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that contain `text`."""
    found = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):  # gone meanwhile
            if text in (line := path.read_bytes().decode(errors="replace")):
                found.append(line)
    return found


def test_kubectl_reads_the_kubeconfig(started: Started) -> None:
    kubectl = Path(os.environ["KUBEBUILDER_ASSETS"], "kubectl")
    result = subprocess.run(
        [kubectl, "--kubeconfig", started.plane.kubeconfig_path, "get", "ns", "-o", "name"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert "namespace/default" in result.stdout.split()


async def test_objects_survive_an_apiserver_restart(started: Started) -> None:
    name = unique("survivor")
    async with core_api(started.plane.kubeconfig_path) as v1:
        await v1.create_namespaced_config_map("default", configmap(name))
    url = started.plane.url
    await started.plane.restart_apiserver()
    assert started.plane.url == url
    async with core_api(started.plane.kubeconfig_path) as v1:
        assert (await v1.read_namespaced_config_map(name, "default")).data == {"value": "1"}


async def test_etcd_compact_expires_older_resource_versions(started: Started) -> None:
    name = unique("compacted")
    async with core_api(started.plane.kubeconfig_path) as v1:
        old = (await v1.create_namespaced_config_map("default", configmap(name))).metadata
        await v1.patch_namespaced_config_map(name, "default", {"data": {"value": "2"}})
        revision = await started.plane.etcd_compact()
        assert revision > int(old.resource_version)
        with pytest.raises(ApiException) as gone:
            await v1.list_namespaced_config_map(
                "default", resource_version=old.resource_version, resource_version_match="Exact"
            )
        assert gone.value.status == 410


async def test_etcd_delete_removes_an_object_behind_the_apiservers_back(started: Started) -> None:
    name = unique("doomed")
    async with core_api(started.plane.kubeconfig_path) as v1:
        await v1.create_namespaced_config_map("default", configmap(name))
    await started.plane.stop_apiserver()
    assert await started.plane.etcd_delete(f"/registry/configmaps/default/{name}") == 1
    await started.plane.start_apiserver()
    async with core_api(started.plane.kubeconfig_path) as v1:
        with pytest.raises(ApiException) as missing:
            await v1.read_namespaced_config_map(name, "default")
        assert missing.value.status == 404


async def test_users_without_roles_are_forbidden(started: Started, tmp_path: Path) -> None:
    plane = started.plane
    alice = plane.kubeconfig_for(started.alice, str(tmp_path / "alice"))
    bob = plane.kubeconfig_for(plane.add_user("bob"), str(tmp_path / "bob"))
    async with core_api(alice) as v1:
        with pytest.raises(ApiException) as forbidden:
            await v1.list_namespaced_pod("default")
        assert forbidden.value.status == 403
        assert "alice" in str(forbidden.value.body)
    async with core_api(bob) as v1:
        with pytest.raises(ApiException) as unknown:
            await v1.list_namespaced_pod("default")
        assert unknown.value.status == 401  # the token file is read only at start
        await plane.restart_apiserver()
        with pytest.raises(ApiException) as forbidden:
            await v1.list_namespaced_pod("default")
        assert forbidden.value.status == 403


async def test_controller_manager_collects_garbage_and_stop_leaves_nothing() -> None:
    async with ControlPlane(controller_manager=True) as plane:
        assert set(plane.pids) == {"etcd", "kube-apiserver", "kube-controller-manager"}
        pids, work_dir = list(plane.pids.values()), Path(plane.kubeconfig_path).parent
        async with core_api(plane.kubeconfig_path) as v1:
            owner = await v1.create_namespaced_config_map("default", configmap("owner"))
            dependent = configmap("dependent", owner=owner.metadata)
            await v1.create_namespaced_config_map("default", dependent)
            await v1.delete_namespaced_config_map("owner", "default")
            for _ in range(150):
                items = (await v1.list_namespaced_config_map("default")).items
                if "dependent" not in {item.metadata.name for item in items}:
                    break
                await asyncio.sleep(0.2)
            else:
                pytest.fail("the garbage collector left the dependent ConfigMap")
    assert not work_dir.exists()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    await plane.stop()  # idempotent


async def test_missing_binaries_say_which_the_start_needs_and_how_to_get_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path))
    with pytest.raises(
        ControlPlaneError,
        match=r"^etcd and kube-apiserver not found in KUBEBUILDER_ASSETS=.*setup-envtest@latest",
    ):
        await ControlPlane().start()
    with pytest.raises(
        ControlPlaneError,
        match=r"^etcd, kube-apiserver and kube-controller-manager not found in the folder given"
        r".*hold no kube-controller-manager",
    ):
        await ControlPlane(str(tmp_path), controller_manager=True).start()


async def test_without_kubebuilder_assets_the_binaries_come_from_setup_envtests_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Where `setup-envtest use` leaves them: the kit runs them with no variable set."""
    version = tmp_path / "kubebuilder-envtest" / "k8s" / f"1.20.2-{platform_suffix()}"
    version.mkdir(parents=True)
    for name in ("etcd", "kube-apiserver", "kubectl"):
        (version / name).symlink_to(Path(os.environ["KUBEBUILDER_ASSETS"], name))
    monkeypatch.delenv("KUBEBUILDER_ASSETS")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    async with ControlPlane() as plane:
        cmdline = Path(f"/proc/{plane.pids['kube-apiserver']}/cmdline")
        argv = (await asyncio.to_thread(cmdline.read_bytes)).split(b"\0")
    assert argv[0].decode() == str(version / "kube-apiserver")


def test_a_failed_start_shows_the_log_and_cleans_up(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(ControlPlaneError, match=r"kube-apiserver exited(.|\n)*unknown flag"):
        asyncio.run(ControlPlane(apiserver_args=["--no-such-flag"]).start())
    assert list(tmp_path.iterdir()) == []
    assert not processes_mentioning(str(tmp_path))


def test_plugin_serves_one_control_plane_to_function_scoped_loops(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(
        """
        from pathlib import Path
        from kubernetes_asyncio import client, config

        async def test_first(control_plane, kubeconfig_path):
            assert kubeconfig_path == control_plane.kubeconfig_path
            Path("pids").write_text(" ".join(map(str, control_plane.pids.values())))
            Path("kubeconfig").write_text(kubeconfig_path)
            await control_plane.restart_apiserver()

        async def test_second(kubeconfig_path):
            api = await config.new_client_from_config(config_file=kubeconfig_path)
            async with api:
                await client.CoreV1Api(api).list_namespace()
        """
    )
    # -p no:jobcore: the entry point, when the project is installed, would load it a second time.
    result = pytester.runpytest_subprocess("-p", "no:jobcore", "-p", "jobcore.testing.plugin")
    result.assert_outcomes(passed=2)
    assert not Path((pytester.path / "kubeconfig").read_text()).exists()
    for pid in (pytester.path / "pids").read_text().split():
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


@pytest.mark.k3s
@pytest.mark.skipif(not docker_available(), reason="k3s needs a Docker engine; none answers here")
async def test_k3s_cluster_answers() -> None:
    cluster = await start_k3s()
    try:
        async with core_api(cluster.kubeconfig_path) as v1:
            assert (await v1.list_node()).items
    finally:
        await cluster.stop()
