"""Fixtures that several modules of the CLI's integration tests ask for by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobcore import Client
from tests.support import installs


@pytest.fixture
def service_account_kubeconfig(
    client: Client, kubeconfig_path: str, tmp_path: Path
) -> installs.AccountKubeconfig:
    """Writes a copy of the admin kubeconfig that authenticates with a ServiceAccount's token
    only: what an installed controller or dashboard runs with, so a test sees its RBAC."""

    async def write(namespace: str, name: str) -> str:
        token = await installs.service_account_token(client, namespace, name)
        path = tmp_path / f"{namespace}.{name}.kubeconfig"
        return installs.with_token(kubeconfig_path, token, path)

    return write
