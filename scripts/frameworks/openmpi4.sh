# Open MPI 4.1 from Debian (openmpi-bin, with mpicc from libopenmpi-dev), prefix /usr.
# shellcheck shell=bash

pins_openmpi4() { echo "debian:openmpi-bin libopenmpi-dev"; }

install_openmpi4() {
  apt_install openmpi-bin libopenmpi-dev || return 1
  mkdir -p "$1" && ln -sfn /usr "$1/home"
}
