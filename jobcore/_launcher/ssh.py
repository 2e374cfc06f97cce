"""The per-job ssh identity of the kinds whose launcher reaches its workers over ssh.

A Secret that launcher and workers both mount,
holding a fresh ed25519 client keypair and a fresh ed25519 host key per job, with a
`known_hosts` that pins that host key; the sshd command line workers run (on any port, as root
or not); the ssh client options and `~/.ssh/config` that make a launcher accept only a host
holding the job's host key; and the launcher's bounded wait for every worker to resolve and
accept connections on that port.

A Secret made before host keys existed holds no host key: such a job keeps the old behaviour
(sshd's own host keys, any host key accepted), so its running workers and launcher still match.
"""

from __future__ import annotations

import base64
import functools
import shlex
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from jobcore._jobs.kind import Job
from jobcore._runtime.resources import Object

KEY_COMMENT = "jobcore"
HOST_KEY_COMMENT = "jobcore-host"
SSH_PRIVATE_KEY = "id_ed25519"
SSH_PUBLIC_KEY = "id_ed25519.pub"
SSH_AUTHORIZED_KEYS = "authorized_keys"
SSH_HOST_KEY = "ssh_host_ed25519_key"
SSH_KNOWN_HOSTS = "known_hosts"
SSH_CONFIG = "config"
SSH_PORT = 22
"""sshd's port unless a job's spec.ssh.port says otherwise."""
SSH_PORT_ENV = "JOBCORE_SSH_PORT"
"""The launcher's variable naming the workers' sshd port, for the wait script."""
SSH_SECRET_MODE = 0o600
"""Files of the mounted Secret: ssh and sshd refuse a private key that others can read
(unless the file belongs to another user: then the group read a pod's fsGroup adds is fine)."""
SSH_WAIT_SECONDS = 300
"""How long a launcher waits for every worker to resolve and accept ssh before giving up."""
SSH_WAIT_TIMEOUT_EXIT = 124
"""A launcher's exit code when workers never became reachable (`timeout`'s convention)."""

SSH_UNPINNED_OPTIONS = (
    "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
)
"""For a Secret without a host key: worker host keys are unknown, accept them, remember none."""
_UNPINNED_CONFIG = """\
Host *
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
"""


@dataclass(frozen=True)
class SSHAccess:
    """How a job's launcher reaches its workers' sshd.

    `pinned` is whether the job's Secret holds a host key: sshd then presents it and clients
    accept no other. `tunnel` is for launchers whose ssh client cannot be told to check host
    keys (colossalai run's fabric never reads known_hosts; horovodrun hard-codes
    `StrictHostKeyChecking=no`): `~/.ssh/config` then reaches each worker through a pinned
    `ssh -W` to that worker's own sshd, which the workers' sshd must allow.
    """

    mount_path: str
    port: int = SSH_PORT
    pinned: bool = True
    tunnel: bool = False

    def file(self, key: str) -> str:
        """The mounted path of one of the Secret's files, quoted for a shell or ssh option."""
        return shlex.quote(f"{self.mount_path.rstrip('/')}/{key}")


def ssh_access(secret: Object, *, mount_path: str, port: int, tunnel: bool = False) -> SSHAccess:
    """The job's SSHAccess with the Secret it has (or will have): pinned if it holds a host key."""
    pinned = SSH_HOST_KEY in (secret.get("data") or {})
    return SSHAccess(mount_path, port, pinned=pinned, tunnel=tunnel and pinned)


def generate_keypair(comment: str = KEY_COMMENT) -> tuple[str, str]:
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
    return private, f"{public.decode()} {comment}"


def ssh_secret(job: Job[Any], name: str, ssh: SSHAccess) -> Object:
    """The job's ssh Secret with a new client keypair and host key; render it only when the job
    has none yet.

    known_hosts pins the host key under the pattern `*`: whatever name, address or port a
    launcher or an MPI daemon uses for a worker matches, and only a host holding this job's host
    key is accepted.
    """
    private, public = generate_keypair()
    host_private, host_public = generate_keypair(HOST_KEY_COMMENT)
    files = {
        SSH_PRIVATE_KEY: private,
        SSH_PUBLIC_KEY: public + "\n",
        SSH_AUTHORIZED_KEYS: public + "\n",
        SSH_HOST_KEY: host_private,
        SSH_KNOWN_HOSTS: f"* {host_public}\n",
        SSH_CONFIG: ssh_client_config(ssh),
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": job.namespace, "labels": job.labels()},
        "type": "Opaque",
        # `data`, not `stringData`: the shape the API server returns, so ours compares equal.
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in files.items()},
    }


def ssh_secret_volume(volume: str, secret: str) -> dict[str, Any]:
    """A volume of the ssh Secret whose files only their owner (and fsGroup, if set) can read."""
    return {"name": volume, "secret": {"secretName": secret, "defaultMode": SSH_SECRET_MODE}}


@functools.lru_cache(maxsize=64)
def sshd_command(sshd_path: str, ssh: SSHAccess) -> tuple[str, ...]:
    """sshd in the foreground on `ssh.port`, logging to stderr, trusting the mounted
    authorized_keys and, when pinned, presenting the mounted host key.

    A Secret volume's directory is world-writable (sticky), which sshd's default
    `StrictModes yes` rejects; the keys file is named explicitly so the mount path need not
    be the user's `~/.ssh`. No pid file: a non-root sshd could not write the default one.
    Made once for all the workers of a job, which share it.
    """
    command = [
        sshd_path,
        "-D",
        "-e",
        "-p",
        str(ssh.port),
        "-o",
        "PidFile=none",
        "-o",
        "StrictModes=no",
        "-o",
        f"AuthorizedKeysFile={ssh.file(SSH_AUTHORIZED_KEYS)}",
    ]
    if ssh.pinned:
        command += ["-o", f"HostKey={ssh.file(SSH_HOST_KEY)}"]
    if ssh.tunnel:
        command += ["-o", "AllowTcpForwarding=local"]
    return tuple(command)


def ssh_client_args(ssh: SSHAccess) -> str:
    """ssh client options for a launcher: the mounted identity, the port, and the job's host key
    required (any host key accepted for a Secret without one)."""
    identity = f"-i {ssh.file(SSH_PRIVATE_KEY)} -p {ssh.port}"
    if not ssh.pinned:
        return f"{identity} {SSH_UNPINNED_OPTIONS}"
    return (
        f"{identity} -o StrictHostKeyChecking=yes "
        f"-o UserKnownHostsFile={ssh.file(SSH_KNOWN_HOSTS)} -o LogLevel=ERROR"
    )


def ssh_client_config(ssh: SSHAccess) -> str:
    """The Secret's `config`, which ssh (and fabric) read when the mount is the user's ~/.ssh.

    It carries what `ssh_client_args` says, for launchers that take no ssh options (MPICH's
    Hydra); with `ssh.tunnel`, a ProxyCommand that reaches the worker through `ssh -W` with
    the host key required, then connects to the worker's own sshd on its loopback.
    """
    if not ssh.pinned:
        return _UNPINNED_CONFIG
    lines = [
        "Host *",
        f"    Port {ssh.port}",
        "    StrictHostKeyChecking yes",
        f"    UserKnownHostsFile {ssh.file(SSH_KNOWN_HOSTS)}",
        "    LogLevel ERROR",
    ]
    if ssh.tunnel:
        # -F /dev/null: the hop must not read this file again and loop. A worker that vanishes
        # (its pod deleted) ends the hop within seconds instead of leaving it on a dead
        # connection.
        alive = "-o ServerAliveInterval=5 -o ServerAliveCountMax=2"
        hop = f"ssh -F /dev/null {ssh_client_args(ssh)} -o BatchMode=yes {alive}"
        lines.append(f"    ProxyCommand {hop} -W 127.0.0.1:{ssh.port} %h")
    return "\n".join(lines) + "\n"


# The wait script's body: `hostfile`, `timeout` and `port` are set before it; it leaves the hosts in
# the bash array `workers`, and `still` for a caller's own bounded wait. Its exit code when giving
# up is SSH_WAIT_TIMEOUT_EXIT. A container's PID 1 gets only the signals it handles: bash would
# ignore SIGTERM, and a launcher deleted while it waits (a pause, a restart) would hold its pod
# for its whole grace period; the trap ends it, and the launch command exec'd after it handles
# its own.
_WAIT_BODY = r"""trap 'exit 143' TERM
case $timeout in
  '' | *[!0-9]*)  # bash arithmetic would run what a job's env hides in the value
    echo "jobcore: the wait time must be a whole number of seconds, not '$timeout'" >&2
    exit 124 ;;
esac
deadline=$((SECONDS + 10#$timeout))
case $port in
  '' | *[!0-9]*)  # it lands in a /dev/tcp path
    echo "jobcore: the ssh port must be a number, not '$port'" >&2
    exit 124 ;;
esac

said=""
still() {  # $1, what is awaited, said once while it lasts; exit 124 once the time is up
  if [ "$1" != "$said" ]; then
    echo "jobcore: $1; waiting"
    said=$1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "jobcore: gave up after ${timeout}s: $1" >&2
    exit 124
  fi
}

reachable() {  # $1 accepts TCP on $port within 5 s (bash's /dev/tcp has no timeout)
  (exec 3<>"/dev/tcp/$1/$port") 2>/dev/null &
  local pid=$! i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; return; }
    sleep 0.5
  done
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 1
}

if [ ! -r "$hostfile" ]; then
  echo "jobcore: cannot read the hostfile $hostfile" >&2
  exit 124
fi
workers=()
while read -r host _ || [ -n "$host" ]; do
  host=${host%%:*}  # Hydra's `host:slots`
  [ -n "$host" ] && workers+=("$host")
done <"$hostfile"
echo "jobcore: waiting up to ${timeout}s for ${#workers[@]} worker(s) to resolve and accept ssh"
for host in "${workers[@]}"; do
  while :; do
    if ! getent hosts "$host" >/dev/null 2>&1; then
      still "worker $host does not resolve"
    elif ! reachable "$host"; then
      still "worker $host does not accept connections on port $port"
    else
      break
    fi
    sleep 1
  done
done
"""


def ssh_wait_script(hostfile_var: str, hostfile: str, seconds_var: str) -> str:
    """bash that waits, bounded, until every hostfile host resolves and accepts connections on
    the ssh port.

    The hostfile's first word per line, up to a colon, is the host (`host slots=N`, `host:N`
    and bare-host files all work). Its path, the timeout and the port come from the environment
    variables `hostfile_var`, `seconds_var` and SSH_PORT_ENV (defaults `hostfile`,
    SSH_WAIT_SECONDS and SSH_PORT), so a test can point them elsewhere; a timeout or port that
    is not ASCII digits is refused before bash uses it. It exits SSH_WAIT_TIMEOUT_EXIT when
    giving up or refusing; otherwise it falls through, with the hosts in the bash array
    `workers`, to the launch command the caller appends.
    """
    return (
        f"\nhostfile=${{{hostfile_var}:-{hostfile}}}\n"
        f"timeout=${{{seconds_var}:-{SSH_WAIT_SECONDS}}}\n"
        f"port=${{{SSH_PORT_ENV}:-{SSH_PORT}}}\n" + _WAIT_BODY
    )
