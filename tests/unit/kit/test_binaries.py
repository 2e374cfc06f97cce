"""Where the kit finds the control plane's binaries, and what it says when they are nowhere:
the places controller-runtime's envtest users keep them, in envtest's order."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from jobcore.testing._controlplane.binaries import SETUP_ENVTEST
from jobcore.testing._controlplane.binaries import find_binaries
from jobcore.testing._controlplane.binaries import platform_suffix

CONTROL_PLANE = ("etcd", "kube-apiserver")
ENVTEST = ("etcd", "kube-apiserver", "kubectl")  # what a setup-envtest download holds


def folder_with(folder: Path, *names: str) -> Path:
    """`folder`, made, holding an executable file for each of `names`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    return folder


def store_version(data_home: Path, version: str, *names: str, suffix: str = "") -> Path:
    """A version folder in setup-envtest's store under `data_home`, for this platform unless
    `suffix` names another."""
    name = f"{version}-{suffix or platform_suffix()}"
    return folder_with(data_home / "kubebuilder-envtest" / "k8s" / name, *names)


def test_the_platform_is_named_as_go_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    assert platform_suffix() == "linux-amd64"
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert platform_suffix() == "linux-arm64"


def test_kubebuilder_assets_comes_first(tmp_path: Path) -> None:
    assets = folder_with(tmp_path / "assets", *ENVTEST)
    store_version(tmp_path, "1.30.0", *ENVTEST)
    system = folder_with(tmp_path / "system", *ENVTEST)
    environ = {"KUBEBUILDER_ASSETS": str(assets), "XDG_DATA_HOME": str(tmp_path)}
    assert find_binaries(CONTROL_PLANE, environ=environ, system=system) == assets


def test_a_folder_given_comes_before_kubebuilder_assets(tmp_path: Path) -> None:
    given = folder_with(tmp_path / "given", *CONTROL_PLANE)
    environ = {"KUBEBUILDER_ASSETS": str(folder_with(tmp_path / "assets", *ENVTEST))}
    assert find_binaries(CONTROL_PLANE, str(given), environ=environ) == given


def test_then_the_newest_version_for_this_platform_in_setup_envtests_store(
    tmp_path: Path,
) -> None:
    store_version(tmp_path, "1.9.0", *ENVTEST)
    store_version(tmp_path, "1.20.2", *ENVTEST)
    newest = store_version(tmp_path, "1.24.1", *ENVTEST)
    store_version(tmp_path, "1.30.0", *ENVTEST, suffix="darwin-arm64")  # another platform's
    store_version(tmp_path, "1.31.0")  # an interrupted download: no binaries
    system = folder_with(tmp_path / "system", *ENVTEST)
    environ = {"XDG_DATA_HOME": str(tmp_path)}
    assert find_binaries(CONTROL_PLANE, environ=environ, system=system) == newest


def test_the_store_is_under_home_without_xdg_data_home(tmp_path: Path) -> None:
    version = store_version(tmp_path / ".local" / "share", "1.20.2", *ENVTEST)
    assert find_binaries(CONTROL_PLANE, environ={"HOME": str(tmp_path)}) == version


def test_a_store_version_without_a_binary_asked_for_is_passed_over(tmp_path: Path) -> None:
    with_kcm = store_version(tmp_path, "1.20.2", *ENVTEST, "kube-controller-manager")
    store_version(tmp_path, "1.24.1", *ENVTEST)
    environ = {"XDG_DATA_HOME": str(tmp_path)}
    names = (*CONTROL_PLANE, "kube-controller-manager")
    assert find_binaries(names, environ=environ) == with_kcm


def test_then_envtests_default_folder(tmp_path: Path) -> None:
    system = folder_with(tmp_path / "system", *CONTROL_PLANE)
    environ = {"XDG_DATA_HOME": str(tmp_path / "empty")}
    assert find_binaries(CONTROL_PLANE, environ=environ, system=system) == system


def test_nowhere_names_what_is_needed_where_it_looked_and_how_to_get_it(tmp_path: Path) -> None:
    store_version(tmp_path, "1.24.1", *ENVTEST, suffix="darwin-arm64")
    environ = {"XDG_DATA_HOME": str(tmp_path)}
    with pytest.raises(FileNotFoundError) as raised:
        find_binaries(CONTROL_PLANE, environ=environ, system=tmp_path / "system")
    store = tmp_path / "kubebuilder-envtest" / "k8s"
    assert str(raised.value) == (
        "etcd and kube-apiserver not found: KUBEBUILDER_ASSETS is not set, setup-envtest's "
        f"store {store} has no {platform_suffix()} version that holds them, nor has "
        f"{tmp_path / 'system'}: `{SETUP_ENVTEST}` downloads them into setup-envtest's store, "
        "where the kit finds them (it needs Go), or set KUBEBUILDER_ASSETS to a folder that "
        "holds them"
    )
    assert SETUP_ENVTEST == "go run sigs.k8s.io/controller-runtime/tools/setup-envtest@latest use"


def test_a_wrong_kubebuilder_assets_is_an_error_not_a_reason_to_look_elsewhere(
    tmp_path: Path,
) -> None:
    assets = folder_with(tmp_path / "assets", "etcd")
    store_version(tmp_path, "1.24.1", *ENVTEST)
    environ = {"KUBEBUILDER_ASSETS": str(assets), "XDG_DATA_HOME": str(tmp_path)}
    with pytest.raises(FileNotFoundError) as raised:
        find_binaries(CONTROL_PLANE, environ=environ)
    assert str(raised.value) == (
        f"kube-apiserver not found in KUBEBUILDER_ASSETS={assets}: point KUBEBUILDER_ASSETS at "
        f"a folder that holds them (`{SETUP_ENVTEST} -p path` downloads them and prints their "
        "folder), or unset it and the kit looks in setup-envtest's store"
    )


def test_a_binary_setup_envtest_does_not_download_says_where_it_comes_from(
    tmp_path: Path,
) -> None:
    given = folder_with(tmp_path / "given", *ENVTEST)
    with pytest.raises(FileNotFoundError) as raised:
        find_binaries((*CONTROL_PLANE, "kube-controller-manager"), str(given), environ={})
    message = str(raised.value)
    assert message.startswith(f"kube-controller-manager not found in the folder given, {given}:")
    assert message.endswith(
        "setup-envtest's downloads hold no kube-controller-manager: copy it from the same "
        "Kubernetes release's server binaries into the folder with the others"
    )
