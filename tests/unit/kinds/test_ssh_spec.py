"""`spec.ssh` of the bundled kinds with sshd workers is `jobcore.launcher.SSHSpec`, defined once."""

from __future__ import annotations

from typing import Any

import pytest

from jobcore.jobs import JobKind
from jobcore.launcher import SSH_MOUNT
from jobcore.launcher import SSH_PORT
from jobcore.launcher import SSHSpec
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.mpijob import MPIJobKind


@pytest.mark.parametrize("kind", [MPIJobKind(), HorovodJobKind()], ids=lambda k: k.resource.kind)
def test_spec_ssh_is_the_launchers_ssh_spec_with_its_defaults(kind: JobKind[Any]) -> None:
    ssh_model = kind.spec_model.model_fields["ssh"].annotation
    assert isinstance(ssh_model, type) and issubclass(ssh_model, SSHSpec)
    given = ssh_model.model_validate({"sshdPath": "/opt/sshd", "port": 2222})
    assert (given.sshd_path, given.ssh_auth_mount_path, given.port) == (
        "/opt/sshd",
        SSH_MOUNT,
        2222,
    )
    assert ssh_model().port == SSH_PORT
