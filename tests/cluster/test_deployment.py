"""The controller as docs/deployment.md installs it, on a real kubelet: its image built from the
Dockerfile, `kubectl apply -k manifests`, the Deployment's securityContext enforced by runc,
probes run by the kubelet, in-cluster configuration with the ServiceAccount's token."""

from __future__ import annotations

import pytest

from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.integration

IDENTITY = (
    "import os\n"
    "print('uid', os.getuid(), 'gid', os.getgid())\n"
    "print([l for l in open('/proc/self/status') if l.startswith(('Seccomp:', 'CapEff:'))])\n"
    "try:\n"
    "    open('/probe', 'w')\n"
    "except OSError as e:\n"
    "    print('root file system:', e.strerror)\n"
)


def test_two_replicas_are_ready_and_one_leads(cluster: Cluster) -> None:
    pods = cluster.controller_pods()
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
    for pod in pods:
        (status,) = pod["status"]["containerStatuses"]
        assert status["ready"] and "running" in status["state"], status
    assert cluster.leader() in {p["metadata"]["name"] for p in pods}


def test_the_controller_runs_unprivileged_with_a_read_only_root(cluster: Cluster) -> None:
    pod = cluster.controller_pods()[0]["metadata"]["name"]
    out = cluster.kubectl("exec", "-n", "jobcore-system", pod, "--", "python", "-c", IDENTITY)
    assert "uid 65532 gid 65532" in out, out
    assert "'Seccomp:\\t2\\n'" in out, out  # the runtime's default seccomp profile, enforced
    assert "'CapEff:\\t0000000000000000\\n'" in out, out
    assert "root file system: Read-only file system" in out, out
