"""The per-job ssh identity of the kinds whose launcher reaches its workers over ssh.

Shared by MPIJob, ColossalAIJob and HorovodJob: a fresh ed25519 keypair per job in a
Secret that launcher and workers both mount, the sshd command line workers run, the client
options that make a launcher trust hosts it has never seen, and the launcher's bounded wait
for every worker to resolve and accept ssh.
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
WAIT_SECONDS = 300
"""How long a launcher waits for every worker to resolve and accept ssh before giving up."""
WAIT_TIMEOUT_EXIT = 124
"""A launcher's exit code when workers never became reachable (`timeout`'s convention)."""

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


# The wait script's body: `hostfile` and `timeout` are set before it; it leaves the hosts in
# the bash array `workers`. Its exit code when giving up is WAIT_TIMEOUT_EXIT.
_WAIT_BODY = r"""case $timeout in
  '' | *[!0-9]*)  # bash arithmetic would run what a job's env hides in the value
    echo "jobcore: the wait time must be a whole number of seconds, not '$timeout'" >&2
    exit 124 ;;
esac
deadline=$((SECONDS + 10#$timeout))

reachable() {  # $1 accepts TCP on port 22 within 5 s (bash's /dev/tcp has no timeout)
  (exec 3<>"/dev/tcp/$1/22") 2>/dev/null &
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
  said=""
  while :; do
    if ! getent hosts "$host" >/dev/null 2>&1; then
      problem="does not resolve"
    elif ! reachable "$host"; then
      problem="does not accept connections on port 22"
    else
      break
    fi
    if [ "$problem" != "$said" ]; then
      echo "jobcore: worker $host $problem; waiting"
      said=$problem
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "jobcore: gave up after ${timeout}s: worker $host $problem" >&2
      exit 124
    fi
    sleep 1
  done
done
"""


def wait_script(hostfile_var: str, hostfile: str, seconds_var: str) -> str:
    """bash that waits, bounded, until every hostfile host resolves and accepts ssh (port 22).

    The hostfile's first word per line, up to a colon, is the host (`host slots=N`, `host:N`
    and bare-host files all work). Its path and the timeout come from the environment
    variables `hostfile_var` and `seconds_var` (defaults `hostfile` and WAIT_SECONDS), so a
    test can point them elsewhere; a timeout that is not ASCII digits is refused before bash
    evaluates it. It exits WAIT_TIMEOUT_EXIT when giving up or refusing; otherwise it falls
    through, with the hosts in the bash array `workers`, to the launch command the caller
    appends.
    """
    return (
        f"\nhostfile=${{{hostfile_var}:-{hostfile}}}\n"
        f"timeout=${{{seconds_var}:-{WAIT_SECONDS}}}\n" + _WAIT_BODY
    )
