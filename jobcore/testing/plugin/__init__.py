"""Pytest plugin: one API server per test session (envtest, k3s or an existing cluster).

The machine's real cluster serves the tests that ask for `real_cluster`.

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
import structlog

from jobcore._runtime.compact import modified_subtrees
from jobcore.testing._controlplane.envtest import ControlPlane
from jobcore.testing._controlplane.k3s import K3sCluster
from jobcore.testing._controlplane.k3s import docker_available
from jobcore.testing._controlplane.k3s import start_k3s
from jobcore.testing._realcluster.cluster import RealCluster
from jobcore.testing._realcluster.cluster import images_folder
from jobcore.testing._realcluster.cluster import real_cluster_available
from jobcore.testing._shared.required import require

BACKENDS = ("envtest", "k3s")
REAL_CLUSTER_GROUP = "jobcore-real-cluster"
"""The xdist group of every test that uses `real_cluster`: one cluster fits a machine, so under
`pytest -n N --dist loadgroup` they all run on one worker, while the other tests of each file
share a group named after the file, as `--dist loadfile` would place them."""
REAL_CLUSTER_WAIT = 1800.0
"""How long a test run waits for another process (a second run, a sandbox) to stop the cluster."""
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
        help="envtest (default: etcd + kube-apiserver from $KUBEBUILDER_ASSETS, else "
        "setup-envtest's store, else /usr/local/kubebuilder/bin) or k3s "
        "(in Docker) (env JOBCORE_K8S_BACKEND)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Check the backend option; offer the async fixtures only where pytest-asyncio runs them;
    declare the `xdist_group` mark where pytest-xdist does not.

    The plugin loads wherever jobcore is installed, so it must never break a pytest run that
    lacks pytest-asyncio.
    """
    backend = config.getoption("k8s_backend")
    if backend not in BACKENDS:  # argparse checks `choices` on the command line, not defaults
        raise pytest.UsageError(f"JOBCORE_K8S_BACKEND={backend}: expected one of {BACKENDS}")
    if config.pluginmanager.hasplugin("asyncio"):
        from jobcore.testing.plugin import fixtures  # noqa: PLC0415

        config.pluginmanager.register(fixtures, "jobcore-async-fixtures")
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        config.pluginmanager.register(_GroupsKept(), "jobcore-xdist-groups")
    if not config.pluginmanager.hasplugin("xdist"):
        # The plugin marks every test (pytest_collection_modifyitems): declared here, the mark
        # neither warns nor fails `--strict-markers` in a kind's tests run without pytest-xdist.
        config.addinivalue_line("markers", "xdist_group(name): the pytest-xdist group of a test")
    _plain_tracebacks()


def _plain_tracebacks() -> None:
    """Unless the tests configured structlog themselves, its console output with plain
    tracebacks: its default prints each logged exception's frames with their local variables
    through rich, where rich is installed, which costs CPU seconds in a test whose reconciles
    fail on purpose, and prints whatever secrets those variables hold."""
    if not structlog.is_configured():
        *shared, _ = structlog.get_config()["processors"]
        plain = structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)
        structlog.configure(processors=[*shared, plain])


class _GroupsKept:
    """Fails the real cluster's tests in an xdist worker whose groups xdist did not take: they
    would run on every worker at once, each waiting for the one cluster the machine has."""

    @pytest.hookimpl(trylast=True)  # after xdist named each item's group in its node id
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            group = item.get_closest_marker("xdist_group")
            lost = "@" not in item.nodeid.rpartition("]")[2]
            if lost and group is not None and REAL_CLUSTER_GROUP in group.args:
                getattr(item, "fixturenames", []).insert(0, "_real_cluster_group_lost")


@pytest.fixture
def _real_cluster_group_lost() -> None:
    pytest.fail(
        f"pytest {pytest.__version__} and this pytest-xdist do not keep xdist_group groups "
        "under --dist loadgroup, so the real cluster's tests would run on every worker at "
        "once: install a pytest and pytest-xdist that do (jobcore's test extra pins them)",
        pytrace=False,
    )


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


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "real_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(REAL_CLUSTER_GROUP))
        elif item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(str(item.path)))


@pytest.fixture(scope="session")
def real_cluster() -> Iterator[RealCluster]:
    """The machine's real cluster, started once per test run (or per xdist worker: keep its
    tests on one, see REAL_CLUSTER_GROUP) with the images of `images_folder()` imported, and
    stopped after it, the host put back as it was (a conftest may give it a narrower scope with
    `serve_real_cluster`).

    Skips the test where the host cannot run one (not root, binaries or packages missing),
    fails it under CI; a component that does not start fails it naming the component's log.
    """
    yield from serve_real_cluster()


def serve_real_cluster() -> Iterator[RealCluster]:
    """The `real_cluster` fixture's body, for a fixture of another scope."""
    require(real_cluster_available())
    cluster = RealCluster(images_folder())
    loop = asyncio.new_event_loop()
    try:
        _run(loop, cluster.start(wait=REAL_CLUSTER_WAIT))
        yield cluster
    finally:
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
