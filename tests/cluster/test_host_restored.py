"""The real cluster leaves the host as it found it, and a crashed run's cluster is taken down by
the next start: sysctls, iptables chains, the bridge, network namespaces and mounts."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from jobcore.testing import RealCluster
from jobcore.testing._realcluster.daemons import pid_of
from jobcore.testing._realcluster.daemons import recorded
from jobcore.testing._realcluster.hoststate import SYSCTLS
from jobcore.testing._realcluster.layout import BRIDGE
from tests.cluster.conftest import Cluster
from tests.cluster.conftest import deploy_with_kueue

pytestmark = pytest.mark.integration


def chains() -> set[str]:
    dump = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"^:((?:KUBE|CNI)-\S+) ", dump, re.M))


def sysctls() -> dict[str, str]:
    values = {}
    for name in SYSCTLS:
        path = Path("/proc/sys") / name.replace(".", "/")
        if path.exists():
            values[name] = path.read_text().strip()
    return values


def leftovers(cluster: RealCluster) -> list[str]:
    """What of the cluster is still on the host."""
    roots = (cluster.layout.kubelet_root, cluster.layout.containerd_state)
    mounts = [
        line.split()[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split()[4].startswith(tuple(str(root) for root in roots))
    ]
    netns = (
        [n for n in os.listdir("/run/netns") if n.startswith("cni-")]
        if Path("/run/netns").is_dir()
        else []
    )
    bridge = [BRIDGE] if Path(f"/sys/class/net/{BRIDGE}").exists() else []
    return mounts + netns + bridge + recorded(cluster.layout.pids)


def saved_sysctls(cluster: RealCluster) -> dict[str, str]:
    lines = (cluster.layout.saved / "sysctls").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line)


def saved_chains(cluster: RealCluster) -> set[str]:
    dump = (cluster.layout.saved / "iptables").read_text()
    return set(re.findall(r"^:((?:KUBE|CNI)-\S+) ", dump, re.M))


async def test_stop_restores_the_host_and_a_crashed_cluster_is_cleaned_at_the_next_start(
    cluster: Cluster, tmp_path: Path
) -> None:
    real = cluster.real
    before_sysctls, before_chains = saved_sysctls(real), saved_chains(real)
    assert chains() - before_chains, "the running cluster has chains of its own"

    await real.stop()
    assert leftovers(real) == []
    assert sysctls() == before_sysctls
    assert chains() == before_chains

    await real.start()
    for name in recorded(real.layout.pids):  # a crash: every daemon killed, nothing cleaned
        if (pid := pid_of(real.layout.pids, name)) is not None:
            os.killpg(pid, signal.SIGKILL)
    await real.start()
    assert real.timings["clean-up of an earlier run"] > 0, real.timings
    assert await real.commands.node_ready()

    await deploy_with_kueue(real, tmp_path)  # the tier's later tests find the controller again
