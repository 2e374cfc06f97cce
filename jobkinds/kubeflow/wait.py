"""The Kubeflow launcher's wait for its workers' names: an init container before the user's command.

Kubeflow creates the launcher with its workers (launcherCreationPolicy AtStartup), and its
command is the user's own `mpirun`, started at once: cluster DNS publishes a worker's name only
once that worker is Ready, so ssh can fail with `Could not resolve hostname` (ssh's
`ConnectionAttempts` retries connections, not lookups), which a backoffLimit of 0 makes the
job's end. Even WaitForWorkersReady leaves the moment between a worker becoming Ready and its
record appearing. So the launcher pod first runs, from the launcher's own image, a POSIX sh
loop that waits, bounded, until every hostfile host resolves; then the user's command runs
unchanged. An image without `getent` is not waited for (the loop says so and ends).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobcore.launcher import SSH_WAIT_SECONDS
from jobcore.launcher import SSH_WAIT_TIMEOUT_EXIT

WAIT_CONTAINER = "jobcore-wait-for-workers"
WAIT_SECONDS_ENV = "JOBCORE_WAIT_SECONDS"
"""Set in the launcher container's env to wait longer or shorter than SSH_WAIT_SECONDS."""
COPIED = ("image", "imagePullPolicy", "env", "securityContext", "resources")
"""What the wait takes from the launcher container: its image, its user, its PATH, its share of
the pod's resources (so the pod asks no more than before)."""

# $1 is the hostfile, $2 the default time limit. Hosts are each line's first word, up to a colon
# (`host slots=N` and `host:N` alike).
SCRIPT = f"""hostfile=$1 timeout=${{{WAIT_SECONDS_ENV}:-$2}}
case $timeout in
  '' | *[!0-9]*)
    echo "jobcore: {WAIT_SECONDS_ENV} must be a whole number of seconds, not '$timeout'" >&2
    exit {SSH_WAIT_TIMEOUT_EXIT} ;;
esac
if ! command -v getent >/dev/null 2>&1; then
  echo "jobcore: no getent in the launcher's image: not waiting for the workers' names" >&2
  exit 0
fi
waited=0
while read -r host _ || [ -n "$host" ]; do
  host=${{host%%:*}}
  [ -n "$host" ] || continue
  said=""
  until getent hosts "$host" >/dev/null 2>&1; do
    if [ -z "$said" ]; then
      echo "jobcore: worker $host does not resolve yet; waiting up to ${{timeout}}s"
      said=1
    fi
    if [ "$waited" -ge "$timeout" ]; then
      echo "jobcore: gave up after ${{timeout}}s: worker $host does not resolve" >&2
      exit {SSH_WAIT_TIMEOUT_EXIT}
    fi
    sleep 1
    waited=$((waited + 1))
  done
done <"$hostfile"
echo "jobcore: every worker's name resolves (waited ${{waited}}s)"
"""


def wait_container(
    launcher: Mapping[str, Any], hostfile: str, mounts: list[dict[str, Any]]
) -> dict[str, Any]:
    """The init container that waits for the names in `hostfile` (under `mounts`), made from
    the `launcher` container."""
    container = {key: launcher[key] for key in COPIED if key in launcher}
    return {
        **container,
        "name": WAIT_CONTAINER,
        "command": ["/bin/sh", "-c", SCRIPT, WAIT_CONTAINER, hostfile, str(SSH_WAIT_SECONDS)],
        "volumeMounts": mounts,
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
