#!/usr/bin/env bash
# The README's main command: a local control plane with the project's controllers running a
# sample job, `jobcore sandbox "$@"`. With --real it first installs what the chosen sample runs
# on (scripts/frameworks.sh: --kind mpijob|colossalaijob|horovodjob, --mpi for an MPIJob); with
# --cluster, that and the real cluster's packages and images (scripts/cluster.sh).
set -euo pipefail
here=$(dirname "$0")
source "$here/env.sh"
real="" cluster="" down="" kind=mpijob mpi=openmpi
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --real) real=1 ;;
    --cluster) cluster=1 ;;
    --down) down=1 ;;
    --kind) kind=${args[i + 1]:-} ;;
    --kind=*) kind=${args[i]#--kind=} ;;
    --mpi) mpi=${args[i + 1]:-} ;;
    --mpi=*) mpi=${args[i]#--mpi=} ;;
  esac
done
if [[ -z $down && ( -n $real || -n $cluster ) ]]; then
  case $kind in
    mpijob) framework=$mpi; [[ $mpi == openmpi ]] && framework=openmpi4 ;;
    *) framework=${kind%job} ;;
  esac
  bash "$here/frameworks.sh" "$framework" || true  # if it failed, jobcore says what is missing
  if [[ -n $cluster ]]; then
    bash "$here/cluster.sh" pause jobcore "$framework" || true
  fi
fi
exec jobcore sandbox "$@"
