#!/usr/bin/env bash
# Sets up what the real-cluster tier of the tests and `jobcore sandbox --cluster` need on this
# machine, and prints how long each step took:
#
#   scripts/cluster.sh [IMAGE...]     IMAGE: as scripts/images.sh names them (none: all)
#
# 1. Kubernetes' binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
#    kubelet, kube-proxy, kubectl and a static pause) in $KUBEBUILDER_ASSETS: scripts/env.sh
#    finds or unpacks them;
# 2. the node's Debian packages: containerd, runc, the CNI plugins, iptables, conntrack,
#    dnsmasq (cluster DNS) and openssl (the cluster's certificates);
# 3. the images (scripts/images.sh): pause, the controller's from the Dockerfile, and one per
#    framework, which needs the frameworks' installs (scripts/frameworks.sh) first.
# Needs root. Exits non-zero naming the step that failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
started=$SECONDS
source "$here/env.sh"
source "$here/apt.sh"
echo "cluster.sh: Kubernetes binaries in $KUBEBUILDER_ASSETS ($((SECONDS - started)) s)" >&2
for binary in kubelet kube-scheduler kube-proxy pause; do
  [[ -x $KUBEBUILDER_ASSETS/$binary ]] || {
    echo "cluster.sh: no $binary in KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS" >&2
    exit 1
  }
done
step=$SECONDS
apt_install containerd runc containernetworking-plugins iptables conntrack dnsmasq-base \
  openssl ca-certificates || { echo "cluster.sh: the node's packages did not install" >&2; exit 1; }
echo "cluster.sh: the node's Debian packages ready in $((SECONDS - step)) s" >&2
step=$SECONDS
bash "$here/images.sh" "$@" || { echo "cluster.sh: some images did not build (above)" >&2; exit 1; }
echo "cluster.sh: images ready in $((SECONDS - step)) s" >&2
echo "cluster.sh: set up in $((SECONDS - started)) s" >&2
