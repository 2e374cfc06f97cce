"""Installing generated manifests as an operator does, for the tests that then run the
controller with its ServiceAccount's token and nothing more: `kubectl`, the token, and
`jobcore run` with the Deployment's own arguments."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

import yaml

from controllers.kinds import BUNDLED_KINDS
from jobcore import Client
from tests.support.commands import LOOPBACK_SERVERS
from tests.support.commands import start_jobcore

BUNDLED = ",".join(BUNDLED_KINDS)
"""The kinds of the checked-in manifests: a plugin installed next to them (examples/torchjob)
has no CRD or RBAC there."""
AccountKubeconfig = Callable[[str, str], Awaitable[str]]
"""The `service_account_kubeconfig` fixture: given a namespace and a ServiceAccount's name,
writes a kubeconfig that authenticates with that account's token only and returns its path."""
_TOKEN_REQUEST = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}


def kubectl(kubeconfig: str, *args: str) -> list[str]:
    assets = os.environ.get("KUBEBUILDER_ASSETS", "")
    return [str(Path(assets) / "kubectl"), "--kubeconfig", kubeconfig, *args]


async def run(argv: Sequence[str], *, timeout: float = 60) -> tuple[int, str, str]:
    """Run a command to its end: exit status, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=timeout)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def namespaced_install(kubeconfig: str, namespace: str, output: Path) -> None:
    """`jobcore manifests --namespace NAMESPACE` of the bundled kinds written to `output`, and
    the cluster admin's part done: its CRDs applied (cluster-scoped, the install leaves them
    out)."""
    written = await start_jobcore(
        "manifests", "--kinds", BUNDLED, "--namespace", namespace, "--output", str(output)
    )
    log, _ = await written.communicate()
    assert written.returncode == 0, log.decode()
    code, _, err = await run(kubectl(kubeconfig, "apply", "-f", str(output / "crds")))
    assert (code, complaints(err)) == (0, []), err


def complaints(err: str) -> list[str]:
    """kubectl's stderr lines but its warning that an object it applies was made without
    `kubectl apply` (an earlier test of the session's API server made the same CRDs through the
    API): what a clean install leaves empty."""
    return [line for line in err.splitlines() if "last-applied-configuration" not in line]


def with_token(admin: str, token: str, path: Path) -> str:
    """A copy of the admin kubeconfig that authenticates with `token` instead."""
    config = yaml.safe_load(Path(admin).read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    return str(path)


async def service_account_token(client: Client, namespace: str, name: str) -> str:
    """A token of the ServiceAccount `name` in `namespace`, from the TokenRequest API."""
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
    answer = await client.request("POST", path, body=_TOKEN_REQUEST)
    token: str = answer["status"]["token"]
    return token


def deployment_args(manifests: Path) -> list[str]:
    """The controller container's arguments in `deploy/controller.yaml` under `manifests`."""
    (deploy,) = yaml.safe_load_all((manifests / "deploy" / "controller.yaml").read_text())
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    return args


@contextlib.asynccontextmanager
async def controller_process(kubeconfig: str, args: Sequence[str]) -> AsyncIterator[list[str]]:
    """`jobcore ARGS` as the Deployment runs it (`args` end with `run`'s options), with
    `kubeconfig`, the bundled kinds and its servers on free loopback ports; its log so far."""
    process = await start_jobcore(
        *args,
        "--kubeconfig",
        kubeconfig,
        "--kinds",
        BUNDLED,
        *LOOPBACK_SERVERS,
    )
    log: list[str] = []

    async def collect() -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            log.append(line.decode())

    reader = asyncio.create_task(collect())
    try:
        yield log
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), timeout=40)
        await reader


def forbidden(log: Sequence[str]) -> list[str]:
    """The log lines of requests the API server refused with 403.

    Other tests' jobs in namespaces being deleted are refused too ("being terminated"): that is
    the namespace's doing, not RBAC's.
    """
    return [line for line in log if "forbidden" in line.lower() and "being terminated" not in line]
