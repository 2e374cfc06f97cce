"""The per-job ssh identity of the kinds whose launcher reaches its workers over ssh.

Shared by MPIJob (and later ColossalAIJob, HorovodJob): a fresh ed25519 keypair per job in a
Secret that launcher and workers both mount, the sshd command line workers run, and the
client options that make a launcher trust hosts it has never seen.
"""

from __future__ import annotations

import base64
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from jobcore import Job, Object

KEY_COMMENT = "jobcore"
PRIVATE_KEY = "id_ed25519"
PUBLIC_KEY = "id_ed25519.pub"
AUTHORIZED_KEYS = "authorized_keys"
CONFIG = "config"
SSH_PORT = 22
SECRET_MODE = 0o600
"""Files of the mounted Secret: ssh refuses a private key others can read."""

CLIENT_OPTIONS = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
"""Worker host keys are unknown and change with every pod: accept them, remember none."""

_CONFIG_FILE = """\
Host *
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
"""


def generate_keypair() -> tuple[str, str]:
    """A fresh keypair: the private key in OpenSSH PEM form, the `ssh-ed25519 ...` line."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private, f"{public.decode()} {KEY_COMMENT}"


def ssh_secret(job: Job[Any], name: str) -> Object:
    """The job's ssh Secret with a new keypair; render it only when the job has none yet."""
    private, public = generate_keypair()
    files = {
        PRIVATE_KEY: private,
        PUBLIC_KEY: public + "\n",
        AUTHORIZED_KEYS: public + "\n",
        CONFIG: _CONFIG_FILE,
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": job.namespace, "labels": job.labels()},
        "type": "Opaque",
        # `data`, not `stringData`: the shape the API server returns, so ours compares equal.
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in files.items()},
    }


def secret_volume(volume: str, secret: str) -> dict[str, Any]:
    """A volume of the ssh Secret whose files only their owner can read."""
    return {"name": volume, "secret": {"secretName": secret, "defaultMode": SECRET_MODE}}


def sshd_command(sshd_path: str, mount_path: str) -> list[str]:
    """sshd in the foreground, logging to stderr, trusting the mounted authorized_keys.

    A Secret volume's directory is world-writable (sticky), which sshd's default
    `StrictModes yes` rejects; the keys file is named explicitly so the mount path need not
    be the user's `~/.ssh`.
    """
    return [
        sshd_path,
        "-D",
        "-e",
        "-o",
        "StrictModes=no",
        "-o",
        f"AuthorizedKeysFile={mount_path.rstrip('/')}/{AUTHORIZED_KEYS}",
    ]


def client_args(mount_path: str) -> str:
    """ssh client options for a launcher: the mounted identity, unknown hosts accepted."""
    return f"-i {mount_path.rstrip('/')}/{PRIVATE_KEY} {CLIENT_OPTIONS}"
