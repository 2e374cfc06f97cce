# Intel MPI 2021 runtime (Hydra: mpiexec.hydra, hydra_pmi_proxy; IMB-MPI1) from PyPI's `impi-rt`.
# shellcheck shell=bash
#
# Pinned to 2021.18.1, the newest that bundles libfabric (lib/libfabric.so.1 and its providers
# such as lib/libtcp-fi.so): 2021.19.0 requires a separate `libfabric>=2.6` distribution that
# PyPI does not have. The runtime ships no compiler wrapper or headers; IMB-MPI1 is the program.

intel_version=2021.18.1

pins_intel() { echo "impi-rt==$intel_version"; }

install_intel() { prefix_install "$1" "impi-rt==$intel_version" hydra_pmi_proxy IMB-MPI1; }
