"""Pytest plugin: one Kubernetes API server per test session (envtest, k3s or an existing one).

The session fixtures are synchronous and drive the control plane's coroutines on a private event
loop: its processes are OS processes and outlive that loop, so the tests keep pytest-asyncio's
function-scoped loops and may still call e.g. `restart_apiserver()` from their own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import reprlib
from collections.abc import Coroutine
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from typing import TypeVar

import pytest

from jobcore._compact import modified_subtrees
from jobcore.testing._controlplane import ControlPlane
from jobcore.testing._k3s import K3sCluster
from jobcore.testing._k3s import docker_available
from jobcore.testing._k3s import start_k3s

BACKENDS = ("envtest", "k3s")
_T = TypeVar("_T")


@dataclass(frozen=True)
class ExistingCluster:
    """The cluster of the current kubeconfig, for `--use-existing-cluster`."""

    kubeconfig_path: str


Cluster = ControlPlane | K3sCluster | ExistingCluster


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jobcore", "Kubernetes control plane for tests")
    group.addoption(
        "--use-existing-cluster",
        action="store_true",
        default=os.environ.get("JOBCORE_USE_EXISTING_CLUSTER", "") in ("1", "true"),
        help="test against the cluster of $KUBECONFIG or ~/.kube/config "
        "(env JOBCORE_USE_EXISTING_CLUSTER=1)",
    )
    group.addoption(
        "--k8s-backend",
        choices=BACKENDS,
        default=os.environ.get("JOBCORE_K8S_BACKEND", "envtest"),
        help="envtest (default: etcd + kube-apiserver from $KUBEBUILDER_ASSETS) or k3s "
        "(in Docker) (env JOBCORE_K8S_BACKEND)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Check the backend option; offer the async fixtures only where pytest-asyncio runs them.

    The plugin loads wherever jobcore is installed, so it must never break a pytest run that
    lacks pytest-asyncio.
    """
    backend = config.getoption("k8s_backend")
    if backend not in BACKENDS:  # argparse checks `choices` on the command line, not defaults
        raise pytest.UsageError(f"JOBCORE_K8S_BACKEND={backend}: expected one of {BACKENDS}")
    if config.pluginmanager.hasplugin("asyncio"):
        from jobcore.testing import _fixtures  # noqa: PLC0415

        config.pluginmanager.register(_fixtures, "jobcore-async-fixtures")


def _run(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, _T]) -> _T:
    task = loop.create_task(coro)
    try:
        return loop.run_until_complete(task)
    except BaseException:
        # A Ctrl-C caught by the loop rather than the task: cancel it so it cleans up after itself.
        task.cancel()
        with contextlib.suppress(BaseException):
            loop.run_until_complete(task)
        raise


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The session's cluster: a started `ControlPlane` unless a k3s or existing one was asked for.

    A test that needs the garbage collector or namespace deletion awaits
    `control_plane.start_controller_manager()`.
    """
    if request.config.getoption("use_existing_cluster"):
        paths = os.environ.get("KUBECONFIG", "").split(os.pathsep)
        yield ExistingCluster(paths[0] or os.path.expanduser("~/.kube/config"))
        return
    backend = request.config.getoption("k8s_backend")
    if backend == "k3s" and not docker_available():
        pytest.skip("k3s backend needs a Docker engine; none answers here")
    loop = asyncio.new_event_loop()
    cluster: ControlPlane | K3sCluster | None = None
    try:
        if backend == "k3s":
            cluster = _run(loop, start_k3s())
        else:
            cluster = ControlPlane()
            _run(loop, cluster.start())
        yield cluster
    finally:
        if cluster is not None:
            _run(loop, cluster.stop())
        loop.close()


@pytest.fixture(scope="session")
def kubeconfig_path(control_plane: Cluster) -> str:
    """An admin kubeconfig for the session's cluster."""
    return control_plane.kubeconfig_path


@pytest.fixture(autouse=True)
def _cached_objects_unmodified() -> Iterator[None]:
    """Fails a test that modified an object from an informer's cache in place.

    Cached objects share equal subtrees, so such a change would reach other objects too.
    """
    yield
    modified = modified_subtrees()
    assert not modified, f"cached objects were modified in place: {reprlib.repr(modified)}"
