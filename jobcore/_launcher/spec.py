"""The spec fields a launcher kind shares: its worker count, and `spec.ssh` (`SSHSpec`).

What the launcher helpers read of a spec besides `worker.template`: `worker.replicas`, bounded
(`WorkerCount`), and sshd's path and port with where the job's ssh keys are mounted. Their
descriptions reach the kinds' CRDs.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from jobcore._jobs.models import ApiModel
from jobcore._launcher.ssh import SSH_PORT

MAX_WORKERS = 1000
"""The most workers a job may ask for: the job's status lists every pod and its hostfile every
worker, and each must fit in one API object; an unbounded count would also have the controller
build that many pods in memory."""
WorkerCount = Annotated[int, Field(ge=1, le=MAX_WORKERS)]
"""A number of worker pods: at least one, at most MAX_WORKERS."""
SSHPort = Annotated[
    int,
    Field(
        ge=1,
        le=65535,
        description="The port the workers' sshd listens on; a non-root user needs one above "
        "1023 (e.g. 2222).",
    ),
]
"""spec.ssh.port of every kind: a TCP port for the workers' sshd."""
SSHDPath = Annotated[str, Field(description="Absolute path of sshd in the worker image.")]
"""spec.ssh.sshdPath of every kind."""
SSH_MOUNT = "/root/.ssh"
"""Where the job's ssh keys are mounted by default: root's ~/.ssh."""


class SSHSpec(ApiModel):
    """spec.ssh: where sshd is in the worker image, where the job's ssh keys are mounted, and
    sshd's port.

    A kind that names the program its launcher runs in the key mount's description (the CRD's,
    what `kubectl explain` shows) subclasses it and gives `ssh_auth_mount_path` again, with the
    same default.
    """

    sshd_path: SSHDPath = "/usr/sbin/sshd"
    ssh_auth_mount_path: str = Field(
        default=SSH_MOUNT,
        description="Where the job's ssh keys are mounted: the ~/.ssh of the user running the "
        "launch.",
    )
    port: SSHPort = SSH_PORT
