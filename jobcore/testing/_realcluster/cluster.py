"""A real single-node Kubernetes 1.20 cluster on this host: the kit's backend for real containers.

etcd, kube-apiserver (client certificates and service-account tokens, Node and RBAC
authorization, the ServiceAccount admission plugin, a real service-account issuer),
kube-controller-manager with every controller, kube-scheduler, containerd and runc, kubelet,
kube-proxy in iptables mode, a CNI bridge and cluster DNS; images come from docker-archive
tarballs (no registry). Kubernetes' binaries come from `$KUBEBUILDER_ASSETS`, the runtime from
the host's packages. It needs root.

One fits a machine (fixed ports, bridge and directories): `start()` first takes down whatever an
earlier run left, and `stop()` puts the host back as it was (`hoststate`). The daemons outlive
this process until `stop()`, so a sandbox can leave the cluster up and a later run take it down.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import socket
import sys
import time
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path

import structlog

from jobcore import JobcoreError
from jobcore.testing._controlplane.binaries import ASSETS_ENV
from jobcore.testing._controlplane.envtest import _log_tail
from jobcore.testing._realcluster import daemons
from jobcore.testing._realcluster import hoststate
from jobcore.testing._realcluster.commands import ClusterCommands
from jobcore.testing._realcluster.dns import lookup
from jobcore.testing._realcluster.layout import CLUSTER_DOMAIN
from jobcore.testing._realcluster.layout import DNS_SERVICE_IP
from jobcore.testing._realcluster.layout import NODE_NAME
from jobcore.testing._realcluster.layout import PAUSE_IMAGE
from jobcore.testing._realcluster.layout import POD_CIDR
from jobcore.testing._realcluster.layout import SERVICE_CIDR
from jobcore.testing._realcluster.layout import Layout
from jobcore.testing._realcluster.layout import write_configs
from jobcore.testing._realcluster.pki import ensure_pki
from jobcore.testing._shared.eventually import eventually
from jobcore.testing._shared.hostcommands import run
from jobcore.testing._shared.started import Started

log = structlog.get_logger("jobcore.testing.realcluster")

KUBE_BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                 "kubelet", "kube-proxy", "kubectl")  # fmt: skip
HOST_COMMANDS = ("containerd", "ctr", "runc", "iptables", "iptables-save", "ip", "dnsmasq",
                 "openssl", "conntrack", "mount")  # fmt: skip
CNI_PLUGINS = Path("/usr/lib/cni")
SET_UP = "bash scripts/cluster.sh (apt packages and images) with KUBEBUILDER_ASSETS exported"


IMAGES_ENV = "JOBCORE_IMAGES"


def images_folder() -> Path:
    """Where the image tarballs to import are: $JOBCORE_IMAGES, else ~/.cache/jobcore/images."""
    if folder := os.environ.get(IMAGES_ENV):
        return Path(folder)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jobcore" / "images"


class RealClusterError(JobcoreError, RuntimeError):
    """A component did not start or answer; the message names it and its log."""


def real_cluster_available(assets_dir: str | None = None) -> str | None:
    """None when a real cluster can run here, else what is missing (to skip or fail a test)."""
    if sys.platform != "linux" or os.geteuid() != 0:
        return "a real cluster needs root on Linux (containerd, kubelet, iptables)"
    assets = assets_dir or os.environ.get(ASSETS_ENV, "")
    gone = [name for name in KUBE_BINARIES if not (Path(assets) / name).is_file()]
    gone += [name for name in HOST_COMMANDS if not shutil.which(name, path=_PATH)]
    if not (CNI_PLUGINS / "bridge").is_file():
        gone.append(f"the CNI plugins in {CNI_PLUGINS}")
    if gone:
        return f"a real cluster needs {', '.join(gone)}: run {SET_UP}"
    return None


_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class RealCluster(Started):
    """The cluster, its admin kubeconfig, and how long each step of `start()` took."""

    def __init__(
        self,
        images: Path | None = None,
        *,
        assets_dir: str | None = None,
        layout: Layout | None = None,
    ) -> None:
        self.layout = layout or Layout.default()
        self._assets = Path(assets_dir or os.environ.get(ASSETS_ENV, ""))
        self._images = images
        self.commands = ClusterCommands(self.layout, self._assets)
        self.timings: dict[str, float] = {}
        """Seconds per step of the last `start()`, in order."""
        self._lock: int | None = None

    @property
    def kubeconfig_path(self) -> str:
        return str(self.layout.admin_kubeconfig)

    @property
    def host_ip(self) -> str:
        return _host_ip()

    async def start(self, *, wait: float = 0) -> None:
        """Start the cluster; if another process runs it, wait up to `wait` seconds for it to
        stop the cluster, then fail naming that process."""
        if (missing := real_cluster_available(str(self._assets))) is not None:
            raise RealClusterError(missing)
        await self.claim(wait)
        self.timings.clear()
        if daemons.recorded(self.layout.pids) or self.layout.saved.is_dir():
            log.warning("taking down a cluster an earlier run left", home=str(self.layout.home))
            await self._timed("clean-up of an earlier run", self._stop())
        try:
            await self._timed("configuration", self._configure())
            await self._timed("control plane", self._start_control_plane())
            await self._timed("containerd", self._start_containerd())
            if self._images is not None:
                await self._timed("image import", self._import(self._images))
            await self._timed("node Ready", self._start_node())
            await self._timed("cluster DNS", self._start_dns())
            await self._timed("default ServiceAccount token", self._default_token())
        except BaseException:
            await self._stop()
            raise

    async def stop(self) -> None:
        """Stop every component, newest first, and put the host back as it was."""
        try:
            await self._stop()
        finally:
            if self._lock is not None:
                os.close(self._lock)  # releases the lock
                self._lock = None

    async def claim(self, wait: float = 0) -> None:
        """Take the machine's cluster (an exclusive lock, held until `stop()`: one fits), as
        `start()` does; alone, before `stop()` takes down a cluster another process left up."""
        if self._lock is not None:
            return
        self.layout.home.mkdir(parents=True, exist_ok=True)
        path = self.layout.home / "lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = path.read_text().strip() or "another process"
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise RealClusterError(f"the real cluster is in use by pid {holder}") from None
                log.info("waiting for the real cluster", used_by=holder)
                await asyncio.sleep(5)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock = fd

    async def _stop(self) -> None:
        pids, c = self.layout.pids, self.commands
        if daemons.pid_of(pids, "kube-apiserver") and daemons.pid_of(pids, "kubelet"):
            # Pods deleted through the API first: kubelet runs their CNI DEL (veths, leases).
            for name in ("kube-controller-manager", "kube-scheduler"):
                await daemons.stop(pids, name)
            await c.kubectl("delete", "pods", "--all", "-A", "--grace-period=0", "--force",
                            "--wait=false", check=False)  # fmt: skip
            with contextlib.suppress(TimeoutError):  # what is left, the next steps kill
                await eventually(c.no_tasks, timeout=60, interval=0.5)
        for name in ("kube-controller-manager", "kube-scheduler", "dns-watch", "dnsmasq"):
            await daemons.stop(pids, name)
        await daemons.stop(pids, "kubelet", grace=30)
        config = self.layout.etc / "containerd.toml"
        if not daemons.pid_of(pids, "containerd") and self.layout.containerd_state.is_dir():
            # A crashed run's shims still run its containers: containerd on the same state
            # finds them again, so they can be stopped.
            with contextlib.suppress(RealClusterError, OSError):
                if config.is_file():
                    await self._start_containerd()
        if daemons.pid_of(pids, "containerd"):
            await c.remove_containers()
        await daemons.stop(pids, "kube-proxy")
        await run(str(self._assets / "kube-proxy"), "--cleanup", check=False)
        await daemons.stop(pids, "containerd", grace=30)
        for name in ("kube-apiserver", "etcd"):
            await daemons.stop(pids, name)
        await hoststate.restore(self.layout)
        for empty in (Path("/run/containerd/s"), Path("/run/containerd")):
            if empty.is_dir() and not any(empty.iterdir()):
                empty.rmdir()
        for state in (
            self.layout.etcd_data,
            self.layout.kubelet_root,
            self.layout.cni_state,
            self.layout.containerd_state,
        ):
            shutil.rmtree(state, ignore_errors=True)

    async def import_images(self, folder: Path) -> list[str]:
        """Import every `*.tar` in `folder` that changed since it was last imported."""
        return await self.commands.import_images(folder)

    async def _import(self, folder: Path) -> None:
        imported = await self.import_images(folder)
        log.info("real cluster: images imported", images=imported)

    async def _timed(self, step: str, work: Awaitable[None]) -> None:
        started = time.monotonic()
        await work
        self.timings[step] = round(time.monotonic() - started, 1)
        log.info("real cluster", step=step, seconds=self.timings[step])

    async def _configure(self) -> None:
        await hoststate.save(self.layout)
        await ensure_pki(self.layout, self.host_ip)
        write_configs(self.layout, self.host_ip)
        for folder in (
            self.layout.kubelet_root,
            self.layout.cni_state,
            self.layout.containerd_root,
        ):
            folder.mkdir(parents=True, exist_ok=True)

    def _start(self, name: str, *argv: str) -> None:
        if daemons.pid_of(self.layout.pids, name) is None:
            binary = argv[0] if argv[0].startswith("/") else str(self._binary(argv[0]))
            daemons.start(self.layout.pids, name, [binary, *argv[1:]], self.layout.log(name))

    def _binary(self, name: str) -> Path:
        asset = self._assets / name
        return asset if asset.is_file() else Path(shutil.which(name, path=_PATH) or name)

    async def _start_control_plane(self) -> None:
        lay, pki, ports = self.layout, self.layout.pki, self.layout.ports
        etcd_url = f"http://127.0.0.1:{ports.etcd}"
        peer_url = f"http://127.0.0.1:{ports.etcd_peer}"
        self._start(
            "etcd", "etcd", "--name=jobcore", f"--data-dir={lay.etcd_data}", "--unsafe-no-fsync",
            "--logger=zap", "--log-level=warn", f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}", f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}", f"--initial-cluster=jobcore={peer_url}",
        )  # fmt: skip
        self._start(
            "kube-apiserver", "kube-apiserver", f"--etcd-servers={etcd_url}",
            "--bind-address=0.0.0.0", f"--secure-port={ports.apiserver}",
            f"--advertise-address={self.host_ip}", "--insecure-port=0",
            f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key",
            f"--client-ca-file={pki}/ca.crt", f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--allow-privileged=true", "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            f"--service-account-issuer=https://kubernetes.default.svc.{CLUSTER_DOMAIN}",
            f"--service-account-key-file={pki}/sa.pub",
            f"--service-account-signing-key-file={pki}/sa.key",
            f"--kubelet-client-certificate={pki}/apiserver-kubelet-client.crt",
            f"--kubelet-client-key={pki}/apiserver-kubelet-client.key",
            "--kubelet-preferred-address-types=InternalIP,Hostname", "--event-ttl=1h",
        )  # fmt: skip
        await self._wait("kube-apiserver", 90, self.commands.api_ready, "/readyz answers ok")
        kcm = f"{pki}/kcm.kubeconfig"
        self._start(
            "kube-controller-manager", "kube-controller-manager", f"--kubeconfig={kcm}",
            f"--authentication-kubeconfig={kcm}", f"--authorization-kubeconfig={kcm}",
            "--bind-address=127.0.0.1", f"--secure-port={ports.controller_manager}", "--port=0",
            "--leader-elect=false", "--controllers=*", "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki}/sa.key", f"--root-ca-file={pki}/ca.crt",
            f"--cluster-signing-cert-file={pki}/ca.crt", f"--cluster-signing-key-file={pki}/ca.key",
            f"--service-cluster-ip-range={SERVICE_CIDR}", f"--cluster-cidr={POD_CIDR}",
            "--allocate-node-cidrs=false",
        )  # fmt: skip
        scheduler = f"{pki}/scheduler.kubeconfig"
        self._start(
            "kube-scheduler", "kube-scheduler", f"--kubeconfig={scheduler}",
            f"--authentication-kubeconfig={scheduler}", f"--authorization-kubeconfig={scheduler}",
            "--bind-address=127.0.0.1", f"--secure-port={ports.scheduler}", "--port=0",
            "--leader-elect=false",
        )  # fmt: skip

    async def _start_containerd(self) -> None:
        self._start(
            "containerd", "containerd", "--config", str(self.layout.etc / "containerd.toml")
        )
        await self._wait(
            "containerd", 30, self.commands.containerd_ready, "it answers `ctr version`"
        )

    async def _start_node(self) -> None:
        lay = self.layout
        self._start(
            "kubelet", "kubelet", f"--config={lay.etc}/kubelet.yaml",
            f"--kubeconfig={lay.pki}/kubelet.kubeconfig", "--container-runtime=remote",
            f"--container-runtime-endpoint=unix://{lay.containerd_socket}",
            "--runtime-request-timeout=5m", f"--root-dir={lay.kubelet_root}",
            f"--hostname-override={NODE_NAME}", f"--node-ip={self.host_ip}",
            f"--pod-infra-container-image={PAUSE_IMAGE}", "--v=1",
        )  # fmt: skip
        self._start("kube-proxy", "kube-proxy", f"--config={lay.etc}/kube-proxy.yaml")
        await self._wait("kubelet", 120, self.commands.node_ready, f"node {NODE_NAME} is Ready")

    async def _start_dns(self) -> None:
        lay, ip = self.layout, self.host_ip
        lay.dns_hosts.touch()
        self._start(
            "dnsmasq", "dnsmasq", "--keep-in-foreground", "--log-facility=-", "--no-resolv",
            f"--server={_upstream_dns()}", "--no-hosts", f"--addn-hosts={lay.dns_hosts}",
            f"--local=/{CLUSTER_DOMAIN}/", "--domain-needed", "--bogus-priv",
            f"--listen-address={ip}", "--bind-interfaces", f"--port={lay.ports.dns}",
            "--cache-size=1000", "--user=root", "--group=root",
        )  # fmt: skip
        self._start(
            "dns-watch", sys.executable, "-m", "jobcore.testing._realcluster.dns",
            lay.apiserver_url, str(lay.pki), str(lay.dns_hosts), str(lay.pids / "dnsmasq.pid"),
            CLUSTER_DOMAIN,
        )  # fmt: skip
        await self.commands.apply_dns_service(DNS_SERVICE_IP, ip, lay.ports.dns)
        name = f"kubernetes.default.svc.{CLUSTER_DOMAIN}"

        async def answers() -> bool:
            try:
                return bool(await asyncio.to_thread(lookup, name, ip, lay.ports.dns))
            except OSError:
                return False

        await self._wait("dns-watch", 30, answers, f"DNS answers {name}")

    async def _default_token(self) -> None:
        await self._wait("kube-controller-manager", 60, self.commands.default_token,
                         "the default ServiceAccount has its token")  # fmt: skip

    async def _wait(
        self, component: str, timeout: float, check: Callable[[], Awaitable[bool]], what: str
    ) -> None:
        """Until `check()` holds; else an error naming `component` and the tail of its log."""
        deadline = time.monotonic() + timeout
        while not await check():
            gone = daemons.pid_of(self.layout.pids, component) is None
            if gone or time.monotonic() > deadline:
                path = self.layout.log(component)
                state = "exited" if gone else f"runs, but not within {timeout:.0f} s"
                raise RealClusterError(
                    f"{component} {state}: waited until {what}; its log, {path}, ends:\n"
                    + _log_tail(path)
                )
            await asyncio.sleep(0.2)


def _host_ip() -> str:
    """The address of the host's default route: pods and the API server's endpoint use it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("1.1.1.1", 53))  # no packet is sent: this only picks the route
        return str(probe.getsockname()[0])


def _upstream_dns() -> str:
    for line in Path("/etc/resolv.conf").read_text().splitlines():
        if line.startswith("nameserver"):
            return line.split()[1]
    return "1.1.1.1"
