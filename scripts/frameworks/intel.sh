# Intel MPI 2021 runtime (Hydra: mpiexec.hydra, hydra_pmi_proxy; IMB-MPI1) from PyPI's `impi-rt`.
# shellcheck shell=bash
#
# Pinned to 2021.18.1, the newest that bundles libfabric (lib/libfabric.so.1 and its providers
# such as lib/libtcp-fi.so): 2021.19.0 requires a separate `libfabric>=2.6` distribution that
# PyPI does not have. The runtime ships no compiler wrapper or headers; IMB-MPI1 is the program.
# pip installs the wheel's data files with --prefix into DEST/prefix, so `home` holds only
# Intel MPI: a venv's own bin/ would put its python first on every pod's PATH.

intel_version=2021.18.1

pins_intel() { echo "impi-rt==$intel_version"; }

install_intel() {
  local python
  python=$(command -v python3) || return 1
  rm -rf "${1:?}" && mkdir -p "$1"  # a stale home/ from an older layout would swallow the link
  venv_install "$1/venv" "$python" --prefix "$1/prefix" "impi-rt==$intel_version" || return 1
  [[ -x $1/prefix/bin/hydra_pmi_proxy && -x $1/prefix/bin/IMB-MPI1 ]] || {
    echo "frameworks.sh: intel: no hydra_pmi_proxy or IMB-MPI1 in $1/prefix/bin" >&2
    return 1
  }
  ln -sfn prefix "$1/home"
}
