#!/usr/bin/env bash
# The README's main command: a local control plane with the project's controllers running a
# sample job, `jobcore sandbox "$@"`. With --real it first installs what the chosen sample runs
# on (scripts/frameworks.sh: --kind mpijob|colossalaijob|horovodjob, --mpi for an MPIJob); with
# --cluster, that and the real cluster's packages and images (scripts/cluster.sh). With
# --launch agent, --real also builds jobcore's agent (scripts/agent.sh) and passes its path,
# and --cluster uses the MPI's image without sshd.
set -euo pipefail
here=$(dirname "$0")
source "$here/env.sh"
real="" cluster="" down="" kind=mpijob mpi=openmpi launch=ssh extra=()
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
    --launch) launch=${args[i + 1]:-} ;;
    --launch=*) launch=${args[i]#--launch=} ;;
  esac
done
if [[ -z $down && ( -n $real || -n $cluster ) ]]; then
  case $kind in
    mpijob) framework=$mpi; [[ $mpi == openmpi ]] && framework=openmpi4 ;;
    *) framework=${kind%job} ;;
  esac
  bash "$here/frameworks.sh" "$framework" || true  # if it failed, jobcore says what is missing
  image=$framework
  if [[ $launch == agent ]]; then
    case $framework in
      openmpi4) image=mpi-pi-nosshd ;;
      mpich | intel | openmpi5) image=$framework-nosshd ;;
    esac
    if [[ -n $real && -z $cluster ]]; then
      agent=$(bash "$here/agent.sh" | tail -n 1) && extra=(--agent-path "$agent")
    fi
  fi
  if [[ -n $cluster ]]; then
    bash "$here/cluster.sh" pause jobcore "$image" || true
  fi
fi
exec jobcore sandbox "$@" "${extra[@]}"
