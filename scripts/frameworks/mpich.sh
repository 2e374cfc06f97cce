# MPICH 5.0 (Hydra: mpiexec.hydra, hydra_pmi_proxy) from PyPI's `mpich` wheel, with mpicc: a
# relocatable MPICH (bin/, lib/, include/) as the wheel's data files.
# shellcheck shell=bash

mpich_version=5.0.2

pins_mpich() { echo "mpich==$mpich_version"; }

install_mpich() { prefix_install "$1" "mpich==$mpich_version" hydra_pmi_proxy mpicc; }
