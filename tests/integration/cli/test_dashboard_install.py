"""The dashboard's in-cluster install: `manifests/dashboard/` applied to the real API server,
`jobcore dashboard` run with the Deployment's own arguments and only its ServiceAccount's
token, showing a running job while every Secret stays out of its reach."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import aiohttp
import pytest
import yaml

from controllers.dashboard.manifests import NAME
from controllers.manifests import NAMESPACE
from jobcore import NAMESPACES
from jobcore import SECRETS
from jobcore import AlreadyExistsError
from jobcore import Client
from jobcore import ForbiddenError
from jobcore import Resource
from jobcore.testing import SimulatedNode
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import wait_for_phase
from jobkinds.mpijob import MPIJobKind
from tests.support import installs
from tests.support import mpijobs
from tests.support.commands import start_jobcore
from tests.support.dashboards import mpijob_dashboard

pytestmark = pytest.mark.integration

RBAC = "rbac.authorization.k8s.io"
SERVICE_ACCOUNTS = Resource("", "v1", "ServiceAccount", "serviceaccounts")
ROLES = Resource(RBAC, "v1", "Role", "roles")
ROLE_BINDINGS = Resource(RBAC, "v1", "RoleBinding", "rolebindings")
INSTALL = Path(__file__).resolve().parents[3] / "manifests" / "dashboard"


def container_args() -> list[str]:
    deployment = next(
        doc
        for doc in yaml.safe_load_all((INSTALL / "dashboard.yaml").read_text())
        if doc["kind"] == "Deployment"
    )
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    return args


async def test_the_in_cluster_dashboard_shows_jobs_and_can_read_no_secret(
    client: Client,
    namespace: str,
    kubeconfig_path: str,
    service_account_kubeconfig: installs.AccountKubeconfig,
    simulated_node: SimulatedNode,
) -> None:
    rules = [
        rule
        for doc in yaml.safe_load_all((INSTALL / "rbac.yaml").read_text())
        for rule in doc.get("rules") or ()
    ]
    assert {verb for rule in rules for verb in rule["verbs"]} == {"get", "list", "watch"}
    assert not [rule for rule in rules if "secrets" in rule["resources"]]
    with contextlib.suppress(AlreadyExistsError):
        await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    await installs.run(installs.kubectl(kubeconfig_path, "apply", "-f", str(INSTALL / "rbac.yaml")))
    scoped = await service_account_kubeconfig(NAMESPACE, NAME)
    async with await Client.from_kubeconfig(scoped) as reader:
        with pytest.raises(ForbiddenError):
            await reader.list(SECRETS, namespace)

    process = await start_jobcore(*container_args(), "--kubeconfig", scoped, "--port", "0")
    try:
        assert process.stdout is not None
        url = ""
        while not url:
            line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
            assert line, "jobcore dashboard ended before it served"
            if line.startswith("jobcore dashboard: "):
                url = line.split(": ", 1)[1].strip()
        async with job_controller(client, MPIJobKind(), namespace=namespace):
            await client.create(mpijobs.MPIJOBS, mpijobs.mpijob(namespace, "seen"))
            await wait_for_phase(client, mpijobs.MPIJOBS, namespace, "seen", "Running")
            async with aiohttp.ClientSession(url) as http:
                pages: list[str] = []

                async def pods_shown() -> bool:
                    async with http.get(
                        f"/jobs/mpijob/{namespace}/seen", allow_redirects=False
                    ) as response:
                        pages.append(await response.text())
                        return response.status == 200 and "seen-launcher" in pages[-1]

                await eventually(pods_shown, timeout=15, interval=0.2)
                page = pages[-1]
                async with http.get("/") as response:
                    overview = await response.text()
        assert "kind: MPIJob" in page  # read with the dashboard's own token
        # every kind installed through the entry point, the example plugin's among them
        assert '<option value="torchjob">TorchJob (torchjob)</option>' in overview
    finally:
        process.terminate()
        await process.wait()


async def test_a_user_who_may_read_only_jobs_and_pods_is_told_what_is_missing(
    client: Client,
    namespace: str,
    service_account_kubeconfig: installs.AccountKubeconfig,
    simulated_node: SimulatedNode,
) -> None:
    read = ["get", "list", "watch"]
    role = {
        "metadata": {"name": "jobs-and-pods"},
        "rules": [
            {"apiGroups": ["batch.tensorstack.dev"], "resources": ["mpijobs"], "verbs": read},
            {"apiGroups": [""], "resources": ["pods"], "verbs": read},
        ],
    }
    binding = {
        "metadata": {"name": "jobs-and-pods"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "jobs-and-pods"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
    }
    await client.create(SERVICE_ACCOUNTS, {"metadata": {"name": "reader"}}, namespace)
    await client.create(ROLES, role, namespace)
    await client.create(ROLE_BINDINGS, binding, namespace)
    scoped = await service_account_kubeconfig(namespace, "reader")
    async with (
        job_controller(client, MPIJobKind(), namespace=namespace),
        await Client.from_kubeconfig(scoped) as reader,
        mpijob_dashboard(reader, namespace) as url,
        aiohttp.ClientSession(url) as http,
    ):
        await client.create(mpijobs.MPIJOBS, mpijobs.mpijob(namespace, "mine"))
        await wait_for_phase(client, mpijobs.MPIJOBS, namespace, "mine", "Running")
        pages: list[str] = []

        async def listed() -> bool:
            async with http.get("/") as response:
                pages.append(await response.text())
            return 'data-job="mpijob/' in pages[-1]

        await eventually(listed, timeout=15, interval=0.2)
        assert "not loaded yet: events" in pages[-1]
        async with http.get(f"/jobs/mpijob/{namespace}/mine/log") as response:
            said = await response.text()  # the stream ends: it may not read the log
        assert "event: status" in said and "no log:" in said and "forbidden" in said.lower(), said
