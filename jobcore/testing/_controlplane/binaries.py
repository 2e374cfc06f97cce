"""Where the kit finds Kubernetes' binaries: where controller-runtime's envtest users keep them.

In order: the folder a caller names, else `$KUBEBUILDER_ASSETS`, else the newest version for
this platform in setup-envtest's store (`$XDG_DATA_HOME/kubebuilder-envtest/k8s/
<version>-<os>-<arch>`, `~/.local/share` standing for an unset `$XDG_DATA_HOME`, as on Linux),
else envtest's default `/usr/local/kubebuilder/bin`. A folder someone named, by argument or by
the variable, is the only one looked in: a wrong one is an error, never a reason to run other
binaries than the ones asked for.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

ASSETS_ENV = "KUBEBUILDER_ASSETS"
SYSTEM_ASSETS = Path("/usr/local/kubebuilder/bin")
"""controller-runtime's envtest looks here when `$KUBEBUILDER_ASSETS` is not set."""
SETUP_ENVTEST = "go run sigs.k8s.io/controller-runtime/tools/setup-envtest@latest use"
"""Downloads etcd, kube-apiserver and kubectl into setup-envtest's store (needs Go)."""
ENVTEST_BINARIES = frozenset({"etcd", "kube-apiserver", "kubectl"})
"""What setup-envtest's downloads hold; the kit's other binaries come from a Kubernetes release."""
_GOARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def platform_suffix() -> str:
    """`<os>-<arch>` as Go names them, as setup-envtest names its store's folders."""
    machine = platform.machine().lower()
    return f"{sys.platform}-{_GOARCH.get(machine, machine)}"


def envtest_store(environ: Mapping[str, str]) -> Path:
    """The folder of setup-envtest's versions: one `<version>-<os>-<arch>` folder each."""
    data = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME", "~")) / ".local/share")
    return Path(data).expanduser() / "kubebuilder-envtest" / "k8s"


def _holds(folder: Path, names: Sequence[str]) -> bool:
    return all(os.access(folder / name, os.X_OK) for name in names)


def _newest_in_store(store: Path, names: Sequence[str], suffix: str) -> Path | None:
    pattern = re.compile(rf"(\d+)\.(\d+)\.(\d+)-{re.escape(suffix)}")
    versions: list[tuple[tuple[int, ...], Path]] = []
    if store.is_dir():
        for folder in store.iterdir():
            if (found := pattern.fullmatch(folder.name)) and _holds(folder, names):
                versions.append((tuple(map(int, found.groups())), folder))
    return max(versions)[1] if versions else None


def how_to_get(names: Sequence[str], *, named: str | None) -> str:
    """Exactly how to get `names` where the kit finds them. `named`: who named the folder looked
    in (`ASSETS_ENV`, or a caller), the only one looked in then; None when none was named."""
    download = f"`{SETUP_ENVTEST} -p path` downloads them and prints their folder"
    if named is None:
        hint = (
            f"`{SETUP_ENVTEST}` downloads them into setup-envtest's store, where the kit finds "
            f"them (it needs Go), or set {ASSETS_ENV} to a folder that holds them"
        )
    elif named == ASSETS_ENV:
        hint = (
            f"point {ASSETS_ENV} at a folder that holds them ({download}), or unset it and the "
            "kit looks in setup-envtest's store"
        )
    else:
        hint = f"give a folder that holds them ({download}), or none and the kit looks for them"
    if others := sorted(set(names) - ENVTEST_BINARIES):
        hint += (
            f". setup-envtest's downloads hold no {_listed(others)}: copy it from the same "
            "Kubernetes release's server binaries into the folder with the others"
        )
    return hint


def find_binaries(
    names: Sequence[str],
    folder: str | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    system: Path = SYSTEM_ASSETS,
) -> Path:
    """The folder that holds every one of `names` (`folder` when given), looked for in the
    module's order.

    Raises FileNotFoundError saying where it looked and how to get them.
    """
    named, given = ("the folder given", folder) if folder else (ASSETS_ENV, environ.get(ASSETS_ENV))
    if given:
        if missing := [name for name in names if not _holds(Path(given), [name])]:
            hint = how_to_get(names, named=named)
            where = f"{ASSETS_ENV}={given}" if named == ASSETS_ENV else f"{named}, {given}"
            raise FileNotFoundError(f"{_listed(missing)} not found in {where}: {hint}")
        return Path(given)
    store, suffix = envtest_store(environ), platform_suffix()
    if found := _newest_in_store(store, names, suffix):
        return found
    if _holds(system, names):
        return system
    raise FileNotFoundError(
        f"{_listed(names)} not found: {ASSETS_ENV} is not set, setup-envtest's store {store} "
        f"has no {suffix} version that holds them, nor has {system}: "
        + how_to_get(names, named=None)
    )


def _listed(names: Sequence[str]) -> str:
    return " and ".join(filter(None, (", ".join(names[:-1]), names[-1])))
