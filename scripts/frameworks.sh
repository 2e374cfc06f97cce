#!/usr/bin/env bash
# Installs the real frameworks the real-tier tests and `jobcore sandbox --real` run, pinned, into
# a cache outside the repository: $JOBCORE_FRAMEWORKS, by default ~/.cache/jobcore/frameworks.
# None of it is a dependency of the jobcore package.
#
#   scripts/frameworks.sh [NAME...]    NAME: openmpi4 openmpi5 mpich intel colossalai horovod nonroot
#                                       (none: all of them)
#
# Each NAME is installed by scripts/frameworks/NAME.sh, which defines `install_NAME`; it
# installs into "$JOBCORE_FRAMEWORKS/NAME" and is skipped while that folder's stamp names the
# same pinned versions. Debian packages come first (needs root and apt-get). The script says
# what it installs and how long each took, and exits non-zero naming what failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export JOBCORE_FRAMEWORKS=${JOBCORE_FRAMEWORKS:-${XDG_CACHE_HOME:-$HOME/.cache}/jobcore/frameworks}
all=(openmpi4 openmpi5 mpich intel colossalai horovod nonroot)
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${all[@]}")

# shellcheck source=scripts/apt.sh
source "$here/apt.sh"

# venv_install FOLDER PYTHON PIP_ARGS...: a fresh virtualenv made by PYTHON, then pip install.
venv_install() {
  local folder=$1 python=$2
  shift 2
  rm -rf "$folder"
  "$python" -m venv "${VENV_ARGS[@]}" "$folder"
  "$folder/bin/python" -m pip install -q --disable-pip-version-check "$@" \
    >"$folder.pip.log" 2>&1 || { cat "$folder.pip.log" >&2; return 1; }
}
VENV_ARGS=()

# prefix_install DEST PIN BINARY...: a wheel whose data files are a whole install prefix (bin/,
# lib/), put with `pip install --prefix` into DEST/prefix, so `home` holds only that software
# (a venv's own bin/ would put its python first on every pod's PATH); DEST/home links to it once
# every BINARY is there.
prefix_install() {
  local dest=$1 pin=$2 binary
  shift 2
  apt_install python3-venv || return 1
  rm -rf "${dest:?}" && mkdir -p "$dest"  # a stale home/ from an older layout would swallow the link
  venv_install "$dest/venv" "$(command -v python3)" --prefix "$dest/prefix" "$pin" || return 1
  for binary in "$@"; do
    [[ -x $dest/prefix/bin/$binary ]] || {
      echo "frameworks.sh: no $binary in $dest/prefix/bin" >&2
      return 1
    }
  done
  ln -sfn prefix "$dest/home"
}

failed=()
# Every pod needs these; each framework's script adds its own.
apt_install openssh-server openssh-client iproute2 || failed+=("openssh-server/iproute2")

for name in "${names[@]}"; do
  script="$here/frameworks/$name.sh"
  if [[ ! -f $script ]]; then
    echo "frameworks.sh: no framework $name (known: ${all[*]})" >&2
    exit 2
  fi
  # shellcheck source=/dev/null
  source "$script"
  stamp="$JOBCORE_FRAMEWORKS/$name/.jobcore-installed"
  pins=$("pins_$name")
  if [[ "$(cat "$stamp" 2>/dev/null)" == "$pins" ]]; then
    echo "frameworks.sh: $name ($pins) already in $JOBCORE_FRAMEWORKS/$name" >&2
    continue
  fi
  echo "frameworks.sh: $name: installing $pins into $JOBCORE_FRAMEWORKS/$name" >&2
  started=$SECONDS
  mkdir -p "$JOBCORE_FRAMEWORKS"
  if "install_$name" "$JOBCORE_FRAMEWORKS/$name"; then
    echo "$pins" >"$stamp"
    echo "frameworks.sh: $name installed in $((SECONDS - started)) s" >&2
  else
    echo "frameworks.sh: $name FAILED after $((SECONDS - started)) s" >&2
    failed+=("$name")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "frameworks.sh: not installed: ${failed[*]}" >&2
  exit 1
fi
