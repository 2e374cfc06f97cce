# A non-root user for the real tier's non-root runs: mpiuser, home /home/mpiuser (its ~/.ssh is
# where those jobs mount their keys), with the next free uid (1000 may belong to someone else).
# The installs of the other frameworks (in root's home by default) must be reachable by that
# user: each folder above $JOBCORE_FRAMEWORKS gets search permission for others (not read: its
# listing stays private).
# shellcheck shell=bash

pins_nonroot() { echo "user:mpiuser home:/home/mpiuser reachable:$JOBCORE_FRAMEWORKS"; }

install_nonroot() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "frameworks.sh: creating the user mpiuser needs root" >&2
    return 1
  fi
  if ! getent passwd mpiuser >/dev/null; then
    useradd --create-home --home-dir /home/mpiuser --shell /bin/bash --user-group mpiuser \
      || return 1
  fi
  [[ $(getent passwd mpiuser | cut -d: -f6) == /home/mpiuser ]] || {
    echo "frameworks.sh: the user mpiuser exists with another home than /home/mpiuser" >&2
    return 1
  }
  local folder
  folder=$(realpath "$JOBCORE_FRAMEWORKS")
  while [[ $folder != / ]]; do
    chmod o+x "$folder" || return 1
    folder=$(dirname "$folder")
  done
  mkdir -p "$1"
}
