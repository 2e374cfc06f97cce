"""Where the real cluster keeps its files, which ports and networks it takes, and its configs.

One real cluster fits a machine: its ports, bridge and directories are fixed, chosen away from
the usual defaults and from the process node's (`jcbr0`, 10.213.0.0/16), so a stale cluster
left by a crashed run is found where the next run looks.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

PAUSE_IMAGE = "k8s.gcr.io/pause:3.2"
"""kubelet 1.20's default sandbox image; containerd's `sandbox_image` names it too."""
NODE_NAME = "jobcore-node"
CLUSTER_DOMAIN = "cluster.local"
POD_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/16"
API_SERVICE_IP = "10.96.0.1"
DNS_SERVICE_IP = "10.96.0.10"
BRIDGE = "jcrn0"


@dataclass(frozen=True)
class Ports:
    etcd: int = 23790
    etcd_peer: int = 23800
    apiserver: int = 16443
    kubelet: int = 20250
    kubelet_healthz: int = 20248
    proxy_metrics: int = 20249
    proxy_healthz: int = 20256
    scheduler: int = 20259
    controller_manager: int = 20257
    dns: int = 1053


@dataclass(frozen=True)
class Layout:
    """The cluster's directories: `home` (certificates, configs, logs, pid files) under the
    user's cache, and the runtime's roots under /var/lib and /run, apart from any default
    containerd or kubelet install."""

    home: Path
    lib: Path = Path("/var/lib/jobcore-cluster")
    run: Path = Path("/run/jobcore-cluster")
    ports: Ports = Ports()

    @classmethod
    def default(cls) -> Layout:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cls(home=cache / "jobcore" / "cluster")

    @property
    def pki(self) -> Path:
        return self.home / "pki"

    @property
    def etc(self) -> Path:
        return self.home / "etc"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def pids(self) -> Path:
        return self.home / "pids"

    @property
    def saved(self) -> Path:
        """The host's settings from before the cluster changed them, until `down` restores them."""
        return self.home / "host-before"

    @property
    def etcd_data(self) -> Path:
        return self.home / "etcd"

    @property
    def dns_hosts(self) -> Path:
        return self.home / "dns" / "hosts"

    @property
    def containerd_root(self) -> Path:
        """Kept from run to run: the imported images stay."""
        return self.lib / "containerd"

    @property
    def containerd_state(self) -> Path:
        return self.run / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.containerd_state / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.lib / "kubelet"

    @property
    def cni_state(self) -> Path:
        return self.lib / "cni"

    @property
    def cni_conf(self) -> Path:
        return self.etc / "cni"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.pki / "admin.kubeconfig"

    @property
    def apiserver_url(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"


def write_configs(layout: Layout, host_ip: str) -> None:
    """containerd's, the CNI bridge's, kubelet's and kube-proxy's configuration files."""
    for folder in (layout.etc, layout.cni_conf, layout.logs, layout.pids, layout.dns_hosts.parent):
        folder.mkdir(parents=True, exist_ok=True)
    (layout.etc / "containerd.toml").write_text(_containerd_toml(layout))
    (layout.cni_conf / "10-jobcore-bridge.conflist").write_text(json.dumps(_cni(layout), indent=2))
    (layout.etc / "kubelet.yaml").write_text(yaml.safe_dump(_kubelet(layout)))
    (layout.etc / "kube-proxy.yaml").write_text(yaml.safe_dump(_kube_proxy(layout)))


def _containerd_toml(layout: Layout) -> str:
    # restrict_oom_score_adj: where root lacks CAP_SYS_RESOURCE, runc cannot lower a container's
    # oom_score_adj and fails every sandbox ("can't get final child's PID from pipe: EOF").
    # Containers' scores are then clamped to containerd's own.
    return f"""version = 2
root = "{layout.containerd_root}"
state = "{layout.containerd_state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{layout.containerd_socket}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{layout.containerd_root}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "{layout.containerd_state}/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{layout.cni_conf}"
"""


def _cni(layout: Layout) -> dict[str, object]:
    """A bridge with hairpin (a pod reaches itself through its Service) and masquerade out."""
    bridge = {
        "type": "bridge",
        "bridge": BRIDGE,
        "isGateway": True,
        "ipMasq": True,
        "hairpinMode": True,
        "ipam": {
            "type": "host-local",
            "dataDir": str(layout.cni_state / "networks"),
            "ranges": [[{"subnet": POD_CIDR}]],
            "routes": [{"dst": "0.0.0.0/0"}],
        },
    }
    portmap = {"type": "portmap", "capabilities": {"portMappings": True}}
    return {"cniVersion": "0.4.0", "name": "jobcore-pods", "plugins": [bridge, portmap]}


def _kubelet(layout: Layout) -> dict[str, object]:
    pki = layout.pki
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": "0.0.0.0",
        "port": layout.ports.kubelet,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": layout.ports.kubelet_healthz,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(pki / "kubelet-serving.crt"),
        "tlsPrivateKeyFile": str(pki / "kubelet-serving.key"),
        "cgroupDriver": "cgroupfs",
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "failSwapOn": False,
        "resolvConf": "/etc/resolv.conf",
        "serializeImagePulls": False,
        # The images exist only locally (no registry): image GC must never delete them.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "2%",
            "imagefs.available": "2%",
            "nodefs.inodesFree": "2%",
        },
        "syncFrequency": "10s",
        "fileCheckFrequency": "10s",
        "nodeStatusUpdateFrequency": "4s",
    }


def _kube_proxy(layout: Layout) -> dict[str, object]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(layout.pki / "proxy.kubeconfig")},
        "mode": "iptables",
        "clusterCIDR": POD_CIDR,
        "hostnameOverride": NODE_NAME,
        "bindAddress": "0.0.0.0",
        "metricsBindAddress": f"127.0.0.1:{layout.ports.proxy_metrics}",
        "healthzBindAddress": f"127.0.0.1:{layout.ports.proxy_healthz}",
        # Zeros leave the host's conntrack sysctls alone.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }
