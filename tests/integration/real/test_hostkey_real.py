"""Real host key pinning: a launcher refuses a worker that presents another host key than the
job's, for each kind's launcher (mpirun's ssh, horovodrun's and colossalai run's through the
pinned ssh hop).

The test swaps the job's `known_hosts` for another key's as soon as the Secret exists, before
the launcher starts: the launcher then expects another key than the workers present, which is
what it meets when another pod answers for a worker's name or address.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from controllers.sandbox import frameworks
from controllers.sandbox import realjobs
from jobcore import SECRETS
from jobcore import Client
from jobcore import NotFoundError
from jobcore._launcher.ssh import SSH_KNOWN_HOSTS
from jobcore.jobs import JobKind
from jobcore.launcher import generate_keypair
from jobcore.testing import ProcessNode
from jobcore.testing import eventually
from jobcore.testing import job_controller
from jobcore.testing import live_pods
from jobcore.testing import require
from jobcore.testing import wait_for_end
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.mpijob import MPIJobKind

pytestmark = [pytest.mark.integration]

REFUSAL = {
    "mpijob": "Host key verification failed.",  # mpirun's ssh
    "horovodjob": "Host key verification failed.",  # the ssh hop under horovodrun's ssh
    # paramiko hides the hop's stderr; the hop closes the socket before any banner.
    "colossalaijob": "Error reading SSH protocol banner",
}
"""What each launcher's output says when the workers' host key is not the pinned one."""
KINDS: dict[str, JobKind[Any]] = {
    "mpijob": MPIJobKind(),
    "horovodjob": HorovodJobKind(),
    "colossalaijob": ColossalAIJobKind(),
}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("kind", list(KINDS))
async def test_a_worker_with_another_host_key_is_refused(
    client: Client, namespace: str, process_node: ProcessNode, tmp_path: Path, kind: str
) -> None:
    require(frameworks.missing(realjobs.framework(kind, "openmpi")))
    sample = realjobs.sample(kind, "openmpi", tmp_path, namespace=namespace)
    name = sample.job["metadata"]["name"]
    _, impostor = generate_keypair("impostor")
    known_hosts = base64.b64encode(f"* {impostor}\n".encode()).decode()

    def log() -> str:
        return process_node.logs(namespace, f"{name}-launcher", sample.launcher_container)

    async with job_controller(client, KINDS[kind], namespace=namespace):
        await client.create(sample.resource, sample.job)

        async def secret_made() -> bool:
            try:
                await client.get(SECRETS, f"{name}-ssh", namespace)
            except NotFoundError:
                return False
            return True

        await eventually(secret_made, timeout=30, interval=0.05)
        assert f"{name}-launcher" not in await live_pods(client, namespace)
        patch = {"data": {SSH_KNOWN_HOSTS: known_hosts}}
        await client.patch(SECRETS, f"{name}-ssh", patch, namespace)
        status = await wait_for_end(
            client, sample.resource, namespace, name, timeout=180, explain=log
        )
    output = log()
    assert status["phase"] == "Failed", output
    assert REFUSAL[kind] in output, output
    assert "sum=" not in output, output  # no rank ran
