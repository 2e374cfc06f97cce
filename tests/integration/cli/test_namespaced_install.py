"""A namespace-scoped install, `jobcore manifests --namespace NS`, as a team installs it: the
CRDs by a cluster admin, the rest with `kubectl apply -k`, then the controller with the
Deployment's own arguments and only its ServiceAccount's token, running a job to its end.

Proves the Role is enough in NS (no request is refused; a job ends, with its children and
events, and is deleted by its TTL; a scaled job's hostfile is patched) and gives nothing outside
it (the token is refused everywhere else).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.manifests import NAME
from jobcore import CONFIGMAPS
from jobcore import LEASES
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Client
from jobcore import ForbiddenError
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.testing import SimulatedNode
from jobcore.testing import background
from jobcore.testing import eventually
from jobcore.testing import wait_for_deletion
from jobcore.testing import wait_for_end
from jobcore.testing import wait_for_events
from jobcore.testing import wait_for_phase
from tests.support import installs
from tests.support.mpijobs import MPIJOBS
from tests.support.mpijobs import mpijob

pytestmark = pytest.mark.integration


async def test_a_namespaced_install_runs_jobs_in_its_namespace_and_reaches_nothing_else(
    client: Client,
    namespace: str,
    kubeconfig_path: str,
    tmp_path: Path,
    service_account_kubeconfig: installs.AccountKubeconfig,
) -> None:
    install = tmp_path / "install"
    await installs.namespaced_install(kubeconfig_path, namespace, install)
    code, out, err = await installs.run(
        installs.kubectl(kubeconfig_path, "apply", "-k", str(install))
    )
    assert (code, installs.complaints(err)) == (0, []), err
    assert f"role.rbac.authorization.k8s.io/{NAME} created" in out, out
    assert "clusterrole" not in out and "namespace/" not in out and "customresource" not in out

    scoped = await service_account_kubeconfig(namespace, NAME)
    node = SimulatedNode(client, name=f"node-{namespace}"[:63], namespace=namespace)
    # "scoped" ends, its workers go with it, and it goes 3 s later; "scaled" runs on.
    node.when(f"{REPLICA_TYPE_LABEL}=launcher,{JOB_NAME_LABEL}=scoped", exit_code=0, after=0.5)
    async with (
        installs.controller_process(scoped, installs.deployment_args(install)) as log,
        background(node.run()),
    ):
        await client.create(MPIJOBS, mpijob(namespace, "scaled"))
        ending = {"cleanUpWorkers": True, "ttlSecondsAfterFinished": 3}
        job = await client.create(MPIJOBS, mpijob(namespace, "scoped", runPolicy=ending))
        status = await wait_for_end(
            client, MPIJOBS, namespace, "scoped", timeout=60, explain=lambda: "".join(log[-5:])
        )
        assert status["phase"] == "Succeeded", status
        uid = job["metadata"]["uid"]
        for resource in (SECRETS, CONFIGMAPS, SERVICES, PODS):
            owned = [
                o["metadata"]["name"]
                for o in (await client.list(resource, namespace))["items"]
                if any(ref["uid"] == uid for ref in o["metadata"].get("ownerReferences", ()))
            ]
            assert owned, f"no {resource.plural} of the job"
        await wait_for_events(client, namespace, "scoped", "Initialized", "Succeeded")
        lease = await client.get(LEASES, NAME, namespace)
        assert lease["spec"]["holderIdentity"], lease

        # ttlSecondsAfterFinished
        await wait_for_deletion(client, MPIJOBS, namespace, "scoped", timeout=30)

        await wait_for_phase(client, MPIJOBS, namespace, "scaled", "Running")
        await client.patch(MPIJOBS, "scaled", {"spec": {"worker": {"replicas": 3}}}, namespace)

        async def hostfile_patched() -> bool:
            config = await client.get(CONFIGMAPS, "scaled-hostfile", namespace)
            return "scaled-worker-2" in config["data"]["hostfile"]

        await eventually(hostfile_patched, timeout=30)
    assert not installs.forbidden(log), installs.forbidden(log)

    controller = await Client.from_kubeconfig(scoped)
    try:
        await controller.list(PODS, namespace)  # its own namespace: allowed
        for resource, elsewhere in (
            (PODS, "default"),
            (PODS, None),  # every namespace
            (MPIJOBS, None),
            (SECRETS, "kube-system"),
            (LEASES, "kube-system"),
        ):
            with pytest.raises(ForbiddenError):
                await controller.list(resource, elsewhere)
    finally:
        await controller.close()
