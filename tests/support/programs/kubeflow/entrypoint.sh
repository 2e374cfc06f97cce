#!/usr/bin/env bash
# The ENTRYPOINT of Kubeflow's MPICH and Intel MPI images (mpi-operator build/base/entrypoint.sh),
# for a node that runs no images: a launcher (K_MPI_JOB_ROLE=launcher) first waits, bounded,
# until its own name and each host of /etc/mpi/hostfile resolve, then every role runs its
# arguments. Kubeflow asks cluster DNS with nslookup; a process pod's names are in its
# /etc/hosts, so this asks the resolver with getent. It also serves Open MPI, whose image has no
# entrypoint: the first word of a hostfile line is the host, before `:slots` (Hydra's) or
# ` slots=N` (Open MPI's).

resolve_host() {
  host="$1"
  max_retry=10
  counter=0
  backoff=0.1
  until getent hosts "$host" >/dev/null; do
    if [ $counter -eq $max_retry ]; then
      echo "Couldn't resolve $host"
      return
    fi
    sleep $backoff
    echo "Couldn't resolve $host... Retrying"
    ((counter++))
    backoff=$(echo - | awk "{print $backoff + $backoff}")
  done
  echo "Resolved $host"
}

if [ "$K_MPI_JOB_ROLE" == "launcher" ]; then
  resolve_host "$HOSTNAME"
  cut -d ':' -f 1 /etc/mpi/hostfile | while read -r host _; do
    resolve_host "$host"
  done
fi

exec "$@"
