"""What every ssh kind renders for host key pinning and the sshd port, and for an older Secret.

Rendered by each kind from a spec, as the controller would create them: the Secret, the
workers' sshd, readiness probe and Service, and the launcher's ssh options, port and config;
what the kinds declare alike, and the worker container each needs in its template.
"""

from __future__ import annotations

import base64
import copy
import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Object
from jobcore.jobs import Job
from jobcore.jobs import JobKind
from jobcore.testing import by_name
from jobcore.testing import container_named
from jobcore.testing import env_of
from jobcore.testing import error_messages
from jobcore.testing import job_manifest
from jobcore.testing import job_of
from jobcore.testing import observed_of
from jobcore.testing import pod_of
from jobcore.testing import require
from jobcore.testing import secret_text
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.colossalaijob.spec import ColossalAIJobSpec
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.horovodjob.children import horovodrun_args
from jobkinds.horovodjob.spec import HorovodJobSpec
from jobkinds.mpi.flavours import OPEN_MPI
from jobkinds.mpi.mpirun import WAIT_TIMEOUT_EXIT
from jobkinds.mpi.mpirun import launcher_command
from jobkinds.mpijob import MPIJobKind
from jobkinds.mpijob.spec import MPIJobSpec

NS = "ns"
TEMPLATE = {"spec": {"containers": [{"name": "worker", "image": "img"}]}}
SPECS: dict[str, dict[str, Any]] = {
    "MPIJob": {"worker": {"replicas": 2, "cmd": ["./train"], "template": TEMPLATE}},
    "HorovodJob": {"worker": {"replicas": 2, "cmd": ["python", "t.py"], "template": TEMPLATE}},
    "ColossalAIJob": {
        "launcher": {"image": "img"},
        "worker": {"replicas": 2, "command": ["train.py"], "template": TEMPLATE},
    },
}
MPIJOB: JobKind[MPIJobSpec] = MPIJobKind()  # mypy checks each kind against the protocol here
HOROVODJOB: JobKind[HorovodJobSpec] = HorovodJobKind()
COLOSSALAIJOB: JobKind[ColossalAIJobSpec] = ColossalAIJobKind()
KINDS: dict[str, Any] = {"MPIJob": MPIJOB, "HorovodJob": HOROVODJOB, "ColossalAIJob": COLOSSALAIJOB}
WORKER_CONTAINER = {"MPIJob": "mpi-worker", "HorovodJob": "worker", "ColossalAIJob": "worker"}


def spec_of(kind: str) -> dict[str, Any]:
    """The kind's plain spec, its worker container named as the kind needs."""
    raw = copy.deepcopy(SPECS[kind])
    raw["worker"]["template"]["spec"]["containers"][0]["name"] = WORKER_CONTAINER[kind]
    return raw


def job_from(kind: str, spec: dict[str, Any], *, name: str = "j") -> Job[Any]:
    return job_of(KINDS[kind], job_manifest(KINDS[kind], spec, name=name, namespace=NS))


def make_job(kind: str, ssh: dict[str, Any] | None = None) -> Job[Any]:
    return job_from(kind, spec_of(kind) | ({"ssh": ssh} if ssh else {}))


def render(kind: str, job: Job[Any], secret: Object | None = None) -> dict[str, Object]:
    workers = [pod_of(job, f"j-worker-{i}", "worker", i, ready=True) for i in (0, 1)]
    others = [secret] if secret is not None else []
    return by_name(KINDS[kind].render(job, observed_of(*workers, *others)))


def env(pod: Object) -> dict[str, str]:
    return env_of(pod["spec"]["containers"][0])


@pytest.mark.parametrize("kind", list(KINDS))
def test_sshd_listens_on_the_port_everything_else_uses(kind: str) -> None:
    job = make_job(kind, {"port": 2222, "sshAuthMountPath": "/home/mpiuser/.ssh"})
    objects = render(kind, job)
    worker = container_named(objects["j-worker-0"], WORKER_CONTAINER[kind])
    assert worker["command"][3:9] == ["-p", "2222", "-o", "PidFile=none", "-o", "StrictModes=no"]
    assert "HostKey=/home/mpiuser/.ssh/ssh_host_ed25519_key" in worker["command"]
    assert worker["readinessProbe"]["tcpSocket"] == {"port": 2222}
    assert objects["j"]["spec"]["ports"] == [{"name": "ssh", "port": 2222, "targetPort": 2222}]
    assert env(objects["j-launcher"])["JOBCORE_SSH_PORT"] == "2222"
    config = secret_text(objects["j-ssh"])["config"]
    assert "    Port 2222\n" in config
    assert "    UserKnownHostsFile /home/mpiuser/.ssh/known_hosts\n" in config


def test_mpirun_and_hydra_get_the_port_and_the_pinned_host_key() -> None:
    job = make_job("MPIJob", {"port": 2222})
    expected = (
        "-o ConnectionAttempts=10 -i /root/.ssh/id_ed25519 -p 2222 -o StrictHostKeyChecking=yes "
        "-o UserKnownHostsFile=/root/.ssh/known_hosts -o LogLevel=ERROR"
    )
    launcher = env(render("MPIJob", job)["j-launcher"])
    assert launcher["OMPI_MCA_plm_rsh_args"] == launcher["PRTE_MCA_plm_ssh_args"] == expected
    job.spec.mpi_implementation = "IntelMPI"
    assert (
        env(render("MPIJob", job)["j-launcher"])["I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS"]
        == expected
    )
    # MPICH's Hydra takes no ssh options: the Secret's config, read as ~/.ssh/config, pins.
    config = secret_text(render("MPIJob", job)["j-ssh"])["config"]
    assert "    StrictHostKeyChecking yes\n" in config and "ProxyCommand" not in config


@pytest.mark.parametrize("kind", ["HorovodJob", "ColossalAIJob"])
def test_launchers_that_accept_any_host_key_go_through_a_pinned_ssh_hop(kind: str) -> None:
    objects = render(kind, make_job(kind, {"port": 2222}))
    proxy = [
        line
        for line in secret_text(objects["j-ssh"])["config"].splitlines()
        if "ProxyCommand" in line
    ]
    assert proxy == [
        "    ProxyCommand ssh -F /dev/null -i /root/.ssh/id_ed25519 -p 2222 "
        "-o StrictHostKeyChecking=yes -o UserKnownHostsFile=/root/.ssh/known_hosts "
        "-o LogLevel=ERROR -o BatchMode=yes -o ServerAliveInterval=5 -o ServerAliveCountMax=2 "
        "-W 127.0.0.1:2222 %h"
    ]
    worker = container_named(objects["j-worker-0"], "worker")
    assert worker["command"][-2:] == ["-o", "AllowTcpForwarding=local"]


def test_horovodrun_and_its_discovery_script_use_the_port() -> None:
    job = make_job("HorovodJob", {"port": 2222})
    assert horovodrun_args(job)[-4:-2] == ["--ssh-port", "2222"]
    job.spec.elastic = job.spec.model_validate(
        {**SPECS["HorovodJob"], "elastic": {"minReplicas": 1, "maxReplicas": 2}}
    ).elastic
    script = render("HorovodJob", job)["j-discovery"]["data"]["discover_hosts.sh"]
    assert '"/dev/tcp/$0/2222"' in script


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("port", [0, 65536])
def test_a_port_outside_1_to_65535_is_refused(kind: str, port: int) -> None:
    with pytest.raises(ValidationError, match=r"ssh\.port"):
        make_job(kind, {"port": port})


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_secret_made_before_host_keys_keeps_its_job_unpinned(kind: str) -> None:
    """Such a job's workers run sshd with their own host keys: requiring the Secret's would
    stop its launcher from reaching them, so its options stay what they were."""
    fresh = render(kind, make_job(kind))["j-ssh"]
    old = copy.deepcopy(fresh)
    for key in ("ssh_host_ed25519_key", "known_hosts"):
        del old["data"][key]
    old["data"]["config"] = base64.b64encode(b"Host *\n    StrictHostKeyChecking no\n").decode()
    objects = render(kind, make_job(kind), secret=old)
    assert objects["j-ssh"] == old
    command = container_named(objects["j-worker-0"], WORKER_CONTAINER[kind])["command"]
    assert not any(arg.startswith(("HostKey=", "AllowTcpForwarding=")) for arg in command)
    if kind == "MPIJob":
        rsh = env(objects["j-launcher"])["OMPI_MCA_plm_rsh_args"]
        assert "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null" in rsh


@pytest.mark.parametrize(
    ("kind", "plural", "short_names"),
    [
        ("MPIJob", "mpijobs", ["mj", "mpij"]),
        ("HorovodJob", "horovodjobs", ["hj", "hvdj"]),
        ("ColossalAIJob", "colossalaijobs", ["caj", "colossalai"]),
    ],
)
def test_every_ssh_kind_is_served_under_its_names(
    kind: str, plural: str, short_names: list[str]
) -> None:
    declared: JobKind[Any] = KINDS[kind]
    assert declared.resource.api_version == "batch.tensorstack.dev/v1beta1"
    assert (declared.resource.kind, declared.resource.plural) == (kind, plural)
    assert list(declared.short_names) == short_names


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_ssh_kind_is_one_launcher_and_its_workers(kind: str) -> None:
    declared: JobKind[Any] = KINDS[kind]
    assert tuple(declared.replica_types) == ("launcher", "worker")
    assert declared.replicas(make_job(kind)) == {"launcher": 1, "worker": 2}
    assert set(declared.child_resources) == {SECRETS, CONFIGMAPS, SERVICES, PODS}
    assert tuple(declared.kept_after_cleanup) == ("launcher",)
    assert list(declared.printer_columns) == [
        {"name": "Workers", "type": "integer", "jsonPath": ".spec.worker.replicas"}
    ]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_missing_worker_container_is_named(kind: str) -> None:
    spec = spec_of(kind)
    spec["worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    needed = WORKER_CONTAINER[kind]
    assert error_messages(KINDS[kind].validate(job_from(kind, spec))) == {
        "spec.worker.template.spec.containers": f'needs a container named "{needed}"'
    }


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_bad_name_a_missing_image_and_relative_ssh_paths_are_each_named(kind: str) -> None:
    mount_path = "authMountPath" if kind == "ColossalAIJob" else "sshAuthMountPath"
    spec = spec_of(kind) | {"ssh": {"sshdPath": "sshd", mount_path: "root/.ssh"}}
    spec["worker"]["template"]["spec"]["containers"][0].pop("image")
    job = job_from(kind, spec, name="9-bad.name")
    assert set(error_messages(KINDS[kind].validate(job))) == {
        "metadata.name",
        "spec.worker.template.spec.containers[0].image",
        "spec.ssh.sshdPath",
        f"spec.ssh.{mount_path}",
    }


# The wait script waits on the port -----------------------------------------------------------


def wait_env(tmp_path: Path, port: str, seconds: int = 1) -> dict[str, str]:
    """An MPIJob launcher's environment that has it wait `seconds` for 127.0.0.1:`port`."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("127.0.0.1 slots=1\n")
    return {
        "PATH": "/usr/bin:/bin",
        "JOBCORE_MPI_HOSTFILE": str(hostfile),
        "JOBCORE_MPI_WAIT_SECONDS": str(seconds),
        "JOBCORE_SSH_PORT": port,
    }


def run_wait(tmp_path: Path, port: str) -> subprocess.CompletedProcess[str]:
    command = launcher_command(["echo", "launched"], OPEN_MPI)
    env = wait_env(tmp_path, port)
    return subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=30)


def test_the_wait_script_waits_for_the_ssh_port(tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert run_wait(tmp_path, str(port)).stdout.splitlines()[-1] == "launched"
    closed = run_wait(tmp_path, str(port))
    assert closed.returncode == WAIT_TIMEOUT_EXIT
    assert f"worker 127.0.0.1 does not accept connections on port {port}" in closed.stderr


def test_the_wait_script_as_a_containers_pid_1_ends_on_sigterm(tmp_path: Path) -> None:
    """The kernel gives a PID namespace's first process only the signals it handles: a launcher
    deleted while it waits for its workers must still stop when the kubelet asks, not be
    killed at the end of its grace period (30 s by default)."""
    require(None if shutil.which("unshare") and os.geteuid() == 0 else "needs root and unshare")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: refused
    command = ["unshare", "--pid", "--fork", "--kill-child"]
    command += launcher_command(["echo", "launched"], OPEN_MPI)
    env = wait_env(tmp_path, str(port), seconds=60)
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) as launcher:
        try:
            assert launcher.stdout is not None
            next(line for line in launcher.stdout if "does not accept connections" in line)
            pid_1 = int(subprocess.check_output(["pgrep", "-P", str(launcher.pid)], text=True))
            os.kill(pid_1, signal.SIGTERM)
            assert launcher.wait(timeout=5) == 128 + signal.SIGTERM
        finally:
            launcher.kill()


@pytest.mark.parametrize("port", ["22;touch CANARY", "$(touch CANARY)", ""])
def test_a_port_that_is_not_digits_is_refused_before_use(tmp_path: Path, port: str) -> None:
    canary = tmp_path / "canary"
    result = run_wait(tmp_path, port.replace("CANARY", str(canary)))
    if port:
        assert result.returncode == WAIT_TIMEOUT_EXIT
        assert "the ssh port must be a number" in result.stderr
    assert not canary.exists()
