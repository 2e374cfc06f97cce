# MPICH 5.0 (Hydra: mpiexec.hydra, hydra_pmi_proxy) from PyPI's `mpich` wheel, with mpicc.
# shellcheck shell=bash
#
# The wheel carries a relocatable MPICH (bin/, lib/, include/) as data files. pip installs them
# with --prefix into DEST/prefix, so `home` holds only MPICH: a venv's own bin/ would put its
# python first on every pod's PATH.

mpich_version=5.0.2

pins_mpich() { echo "mpich==$mpich_version"; }

install_mpich() {
  local python
  python=$(command -v python3) || return 1
  rm -rf "${1:?}" && mkdir -p "$1"  # a stale home/ from an older layout would swallow the link
  venv_install "$1/venv" "$python" --prefix "$1/prefix" "mpich==$mpich_version" || return 1
  [[ -x $1/prefix/bin/hydra_pmi_proxy && -x $1/prefix/bin/mpicc ]] || {
    echo "frameworks.sh: mpich: no hydra_pmi_proxy or mpicc in $1/prefix/bin" >&2
    return 1
  }
  ln -sfn prefix "$1/home"
}
