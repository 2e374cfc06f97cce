"""The HorovodJob kind on plain objects: API, validation, children, horovodrun, outcomes."""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys
from collections.abc import Iterator
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobcore import Object
from jobcore._jobs.plan import plan
from jobcore.jobs import Job
from jobcore.jobs import Outcome
from jobcore.jobs import run_mode_errors
from jobcore.launcher import SSH_PORT_ENV
from jobcore.launcher import SSH_WAIT_TIMEOUT_EXIT
from jobcore.testing import accepting_connections
from jobcore.testing import by_name
from jobcore.testing import env_list
from jobcore.testing import error_messages
from jobcore.testing import observed_of
from jobcore.testing import pod_of
from jobcore.testing import run_command
from jobcore.testing import spec_with
from jobcore.testing import terminated
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.horovodjob.children import ELASTIC_SCRIPT
from jobkinds.horovodjob.children import LAUNCHER_SCRIPT
from jobkinds.horovodjob.children import SOCKET_TIMEOUT_SECONDS
from jobkinds.horovodjob.children import discovery_text
from jobkinds.horovodjob.children import horovodrun_args
from jobkinds.horovodjob.children import launcher_command
from jobkinds.horovodjob.spec import HorovodJobSpec
from jobkinds.mpi.openmpi import UNSAFE_ENV_EXIT
from tests.support.builders import JobMaker

NS = "team-a"
NAME = "hvd"
KIND = HorovodJobKind()
SAMPLES = Path(__file__).resolve().parents[3] / "manifests" / "samples"

BASE_YAML = """
worker:
  replicas: 2
  slotsPerWorker: 2
  cmd: [python, train.py, --epochs, "3"]
  template:
    spec:
      containers:
        - name: worker
          image: horovod/horovod:0.28.1
          workingDir: /code
          env: [{name: NCCL_DEBUG, value: INFO}]
          resources: {limits: {cpu: "1"}}
"""


def base_spec(**changes: Any) -> dict[str, Any]:
    """The base spec with top-level keys replaced, nested dicts merged one level deep."""
    return spec_with(yaml.safe_load(BASE_YAML), **changes)


def elastic_spec(**changes: Any) -> dict[str, Any]:
    elastic = base_spec(elastic={"minReplicas": 1, "maxReplicas": 4, "resetLimit": 3})
    return spec_with(elastic, **changes)


make_job = JobMaker(KIND, base_spec, name=NAME, namespace=NS)


def pod(replica_type: str, index: int = 0, *, ready: bool = True, **state: Any) -> Object:
    name = f"{NAME}-launcher" if replica_type == "launcher" else f"{NAME}-worker-{index}"
    return pod_of(make_job(), name, replica_type, index, ready=ready, **state)


def launcher_of(job: Job[HorovodJobSpec], *pods: Object) -> Object:
    return by_name(KIND.render(job, observed_of(*pods)))[f"{NAME}-launcher"]


def errors_of(spec: Mapping[str, Any], name: str = NAME) -> dict[str, str]:
    return error_messages(KIND.validate(make_job(spec, name)))


# API ------------------------------------------------------------------------------------


def test_defaults_and_camel_case_round_trip() -> None:
    spec = HorovodJobSpec.model_validate(base_spec())
    assert spec.worker.slots_per_worker == 2
    assert spec.horovod.backend == "gloo"
    assert spec.horovod.network_interfaces == []
    assert spec.horovod.start_timeout is None
    assert spec.elastic is None
    dumped = spec.to_api()
    assert dumped["worker"]["slotsPerWorker"] == 2
    assert dumped["ssh"] == {
        "sshdPath": "/usr/sbin/sshd",
        "sshAuthMountPath": "/root/.ssh",
        "port": 22,
    }
    assert HorovodJobSpec.model_validate(dumped) == spec
    elastic = HorovodJobSpec.model_validate(elastic_spec()).to_api()["elastic"]
    assert elastic == {
        "minReplicas": 1,
        "maxReplicas": 4,
        "resetLimit": 3,
        "blacklistCooldown": {"minSeconds": 1, "maxSeconds": 60},
    }


@pytest.mark.parametrize(
    "broken",
    [
        base_spec(worker={"replicas": 0}),
        base_spec(worker={"slotsPerWorker": 0}),
        base_spec(worker={"cmd": []}),
        base_spec(horovod={"backend": "nccl"}),
        base_spec(horovod={"startTimeout": 0}),
        base_spec(horovod={"glooTimeoutSeconds": 0}),
        elastic_spec(elastic={"blacklistCooldown": {"minSeconds": 0}}),
        elastic_spec(elastic={"blacklistCooldown": {"maxSeconds": 3601}}),
        base_spec(elastic={"minReplicas": 0, "maxReplicas": 2}),
        base_spec(elastic={"maxReplicas": 2}),
        base_spec(worker={"slots": 2}),
    ],
)
def test_schema_rejects_what_the_api_forbids(broken: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        HorovodJobSpec.model_validate(broken)


# Validation -----------------------------------------------------------------------------


def test_base_and_elastic_specs_are_valid() -> None:
    assert errors_of(base_spec()) == {}
    assert errors_of(elastic_spec()) == {}


def test_validation_names_each_field() -> None:
    """What only a HorovodJob has; test_ssh_rendering checks what every ssh kind has."""
    spec = base_spec(horovod={"networkInterfaces": ["eth0", "eth 1"]})
    template = spec["worker"]["template"]["spec"]
    template["containers"][0]["volumeMounts"] = [{"name": "x", "mountPath": "/etc/horovod/"}]
    template["volumes"] = [{"name": "jobcore-ssh", "emptyDir": {}}]
    assert set(errors_of(spec)) == {
        "spec.horovod.networkInterfaces[1]",
        "spec.worker.template.spec.containers[0].volumeMounts[0].mountPath",
        "spec.worker.template.spec.volumes[0].name",
    }


WORKER = "spec.worker.template.spec.containers[0]"


def test_what_horovodrun_writes_into_a_shell_command_is_checked() -> None:
    spec = base_spec(ssh={"sshAuthMountPath": "/home/user/.ssh;id"})
    container = spec["worker"]["template"]["spec"]["containers"][0]
    container["workingDir"] = "/code/`id`"
    container["env"] = env_list(
        {"NOTE": "$(quoted by horovodrun)", "A;B": "1", "OMPI_MCA_btl": "$(id)"}
    )
    errors = errors_of(spec)
    assert set(errors) == {
        "spec.ssh.sshAuthMountPath",
        f"{WORKER}.workingDir",
        f"{WORKER}.env[1].name",
    }
    assert "letters, digits and . _ + @ = : , / - only" in errors["spec.ssh.sshAuthMountPath"]
    assert "'/code/`id`'" in errors[f"{WORKER}.workingDir"]
    assert "horovodrun writes it unquoted" in errors[f"{WORKER}.env[1].name"]
    # With --mpi, horovodrun does not cd; Open MPI copies its variables into orted's command.
    spec["horovod"] = {"backend": "mpi"}
    assert set(errors_of(spec)) == {
        "spec.ssh.sshAuthMountPath",
        f"{WORKER}.env[1].name",
        f"{WORKER}.env[2].value",
    }


@pytest.mark.parametrize("backend", ["gloo", "mpi"])
def test_an_env_from_prefix_must_be_a_shell_name(backend: str) -> None:
    """horovodrun writes every name unquoted; a ConfigMap's keys are safe, a prefix may not be."""
    spec = base_spec(horovod={"backend": backend})
    spec["worker"]["template"]["spec"]["containers"][0]["envFrom"] = [
        {"prefix": "APP_", "configMapRef": {"name": "settings"}},
        {"prefix": "X;id;", "secretRef": {"name": "keys"}},
        {"configMapRef": {"name": "more"}},
    ]
    errors = errors_of(spec)
    assert errors == {
        f"{WORKER}.envFrom[1].prefix": "must be a shell variable name ([A-Za-z_][A-Za-z0-9_]*): "
        "horovodrun writes the names it makes unquoted into the command the workers' shell "
        "runs, got 'X;id;'"
    }


def test_elastic_bounds_and_backend() -> None:
    spec = base_spec(
        worker={"replicas": 5},
        elastic={"minReplicas": 3, "maxReplicas": 2},
        horovod={"backend": "mpi"},
    )
    errors = errors_of(spec)
    assert set(errors) == {
        "spec.horovod.backend",
        "spec.elastic.maxReplicas",
        "spec.worker.replicas",
    }
    assert errors["spec.horovod.backend"] == 'must be "gloo" for an elastic job'
    assert "within spec.elastic [3, 2], got 5" in errors["spec.worker.replicas"]
    below = base_spec(worker={"replicas": 1}, elastic={"minReplicas": 2, "maxReplicas": 4})
    assert list(errors_of(below)) == ["spec.worker.replicas"]
    cooldown = elastic_spec(elastic={"blacklistCooldown": {"minSeconds": 30, "maxSeconds": 10}})
    assert errors_of(cooldown) == {
        "spec.elastic.blacklistCooldown.maxSeconds": "must be at least "
        "spec.elastic.blacklistCooldown.minSeconds"
    }


def test_long_names_count_max_replicas_and_run_modes_are_checked() -> None:
    name = "j" * 54  # "-worker-9" fits in 63, "-worker-10" does not
    assert errors_of(base_spec(), name=name) == {}
    spec = base_spec(elastic={"minReplicas": 1, "maxReplicas": 11})
    assert "exceeds 63" in errors_of(spec, name=name)["metadata.name"]
    debug = base_spec(runMode={"debug": {"enabled": True, "replicaSpecs": [{"type": "master"}]}})
    errors = run_mode_errors(make_job(debug).spec, KIND.replica_types)
    assert [e.path for e in errors] == ["spec.runMode.debug.replicaSpecs[0].type"]


# Rendering: static ------------------------------------------------------------------------


def test_static_render_waits_for_every_worker_before_the_launcher() -> None:
    job = make_job()
    for pods in ((), (pod("worker", 0),), (pod("worker", 0), pod("worker", 1, ready=False))):
        objects = KIND.render(job, observed_of(*pods))
        assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
            ("Secret", "hvd-ssh"),
            ("ConfigMap", "hvd-hostfile"),
            ("Service", "hvd"),
            ("Pod", "hvd-worker-0"),
            ("Pod", "hvd-worker-1"),
        ]
    ready = observed_of(pod("worker", 0), pod("worker", 1))
    assert "hvd-launcher" in by_name(KIND.render(job, ready))
    # An existing launcher is kept though a worker is no longer Ready.
    kept = observed_of(pod("worker", 0, ready=False), pod("worker", 1), pod("launcher"))
    assert "hvd-launcher" in by_name(KIND.render(job, kept))


def test_hostfile_lists_every_worker_with_its_slots_and_no_blank_line() -> None:
    hostfile = by_name(KIND.render(make_job(), observed_of()))["hvd-hostfile"]
    assert hostfile["data"] == {
        "hostfile": "hvd-worker-0.hvd.team-a.svc.cluster.local slots=2\n"
        "hvd-worker-1.hvd.team-a.svc.cluster.local slots=2\n"
    }


def test_static_launcher_command_argument_by_argument() -> None:
    job = make_job(base_spec(horovod={"networkInterfaces": ["eth0", "ib0"], "startTimeout": 120}))
    command = launcher_of(job, pod("worker", 0), pod("worker", 1))["spec"]["containers"][0][
        "command"
    ]
    assert command[:4] == ["/bin/bash", "-c", LAUNCHER_SCRIPT, "jobcore-horovod-launcher"]
    assert command[4:] == [
        "-np",
        "4",
        "--hostfile",
        "/etc/horovod/hostfile",
        "--gloo",
        "--network-interfaces",
        "eth0,ib0",
        "--start-timeout",
        "120",
        "python",
        "train.py",
        "--epochs",
        "3",
    ]
    mpi = make_job(base_spec(horovod={"backend": "mpi"}), name=NAME)
    args = launcher_of(mpi, pod("worker", 0), pod("worker", 1))["spec"]["containers"][0]["command"][
        4:
    ]
    assert args == [
        "-np",
        "4",
        "--hostfile",
        "/etc/horovod/hostfile",
        "--mpi",
        "python",
        "train.py",
        "--epochs",
        "3",
    ]


def test_a_custom_key_path_is_passed_as_the_identity_file() -> None:
    job = make_job(base_spec(ssh={"sshAuthMountPath": "/home/u/.ssh"}))
    assert horovodrun_args(job)[5:7] == [
        "--ssh-identity-file",
        "/home/u/.ssh/id_ed25519",
    ]


def test_launcher_copies_the_worker_container_and_mounts_keys_and_hostfile() -> None:
    launcher = launcher_of(make_job(), pod("worker", 0), pod("worker", 1))
    spec = launcher["spec"]
    assert spec["restartPolicy"] == "Never"
    assert "hostname" not in spec and "subdomain" not in spec
    [container] = spec["containers"]
    assert container["name"] == "launcher"
    assert container["image"] == "horovod/horovod:0.28.1"
    assert container["workingDir"] == "/code"
    assert container["resources"] == {"limits": {"cpu": "1"}}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NCCL_DEBUG"] == "INFO"
    assert env["JOBCORE_HOROVOD_HOSTFILE"] == "/etc/horovod/hostfile"
    assert "readinessProbe" not in container
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/root/.ssh", "/etc/horovod"}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["jobcore-horovod"]["configMap"] == {"name": "hvd-hostfile"}
    assert volumes["jobcore-ssh"]["secret"] == {"secretName": "hvd-ssh", "defaultMode": 0o600}
    assert launcher["metadata"]["labels"]["jobcore.dev/replica-type"] == "launcher"


def test_mpi_backend_keeps_fqdn_hostnames() -> None:
    job = make_job(base_spec(horovod={"backend": "mpi"}))
    launcher = launcher_of(job, pod("worker", 0), pod("worker", 1))
    env = {e["name"]: e["value"] for e in launcher["spec"]["containers"][0]["env"]}
    assert env["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
    assert env["PRTE_MCA_prte_keep_fqdn_hostnames"] == "true"
    assert "-i /root/.ssh/id_ed25519" in env["OMPI_MCA_plm_rsh_args"]


def test_workers_run_sshd_with_hostname_and_a_tcp_probe() -> None:
    worker = by_name(KIND.render(make_job(), observed_of()))["hvd-worker-1"]
    spec = worker["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["restartPolicy"]) == (
        "hvd-worker-1",
        "hvd",
        "Never",
    )
    [container] = spec["containers"]
    assert container["command"][:5] == ["/usr/sbin/sshd", "-D", "-e", "-p", "22"]
    assert container["readinessProbe"]["tcpSocket"] == {"port": 22}
    assert worker["metadata"]["labels"]["jobcore.dev/replica-index"] == "1"


def test_service_is_headless_over_the_workers() -> None:
    service = by_name(KIND.render(make_job(), observed_of()))["hvd"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"]["jobcore.dev/replica-type"] == "worker"


def test_existing_secret_is_reused_and_paused_jobs_have_no_pods() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hvd-ssh"}, "data": {}}
    objects = KIND.render(make_job(), observed_of(secret))
    assert objects[0] is secret
    paused = make_job(base_spec(runMode={"pause": {"enabled": True}}))
    kinds = [o["kind"] for o in plan(KIND, paused, observed_of(pod("worker", 0), pod("launcher")))]
    assert kinds == ["Secret", "ConfigMap", "Service"]


def test_a_gang_gets_its_launcher_at_once() -> None:
    for spec in (base_spec(), elastic_spec()):
        job = dataclasses.replace(make_job(spec), gang=True)
        assert "hvd-launcher" in by_name(KIND.render(job, observed_of()))


def test_debug_mode_starts_the_launcher_at_once_with_sleep_and_workers_keep_sshd() -> None:
    job = make_job(base_spec(runMode={"debug": {"enabled": True}}))
    objects = by_name(plan(KIND, job, observed_of()))
    assert objects["hvd-launcher"]["spec"]["containers"][0]["command"] == ["sleep", "inf"]
    [worker] = objects["hvd-worker-0"]["spec"]["containers"]
    assert worker["command"][:5] == ["/usr/sbin/sshd", "-D", "-e", "-p", "22"]
    assert worker["readinessProbe"]["tcpSocket"] == {"port": 22}


# Rendering: elastic -------------------------------------------------------------------------


def discovery(objects: list[Object]) -> str:
    data: dict[str, str] = by_name(objects)["hvd-discovery"]["data"]
    assert list(data) == ["discover_hosts.sh"]
    return data["discover_hosts.sh"]


def run_discovery(script: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "discover_hosts.sh"
    path.write_text(script)
    path.chmod(0o755)
    out = subprocess.run([str(path)], check=True, capture_output=True, text=True, timeout=10)
    return sorted(out.stdout.splitlines())


def test_discovery_script_probes_every_worker_up_to_max_replicas() -> None:
    job = make_job(elastic_spec(worker={"replicas": 2}, elastic={"maxReplicas": 3}))
    script = discovery(KIND.render(job, observed_of()))
    assert script == discovery_text(
        [f"hvd-worker-{i}.hvd.team-a.svc.cluster.local" for i in range(3)], 2
    )
    assert script.startswith("#!/bin/bash\n")
    # Pods coming and going do not change it: it probes them when horovodrun runs it.
    pods = (pod("worker", 0), pod("worker", 1, ready=False), pod("worker", 2))
    assert discovery(KIND.render(job, observed_of(*pods))) == script
    assert "hvd-hostfile" not in by_name(KIND.render(job, observed_of()))


@pytest.fixture
def listener() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections, standing in for a worker's sshd."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def test_discovery_script_prints_the_hosts_that_accept_connections(
    listener: int, tmp_path: Path
) -> None:
    hosts = ["127.0.0.1", "127.0.0.2", "no-such-worker.invalid"]
    script = discovery_text(hosts, 3, port=listener)
    assert run_discovery(script, tmp_path) == ["127.0.0.1:3"]
    with socket.socket() as unused:  # bound, never listening: refuses
        unused.bind(("127.0.0.1", 0))
        closed = discovery_text(hosts, 3, port=unused.getsockname()[1])
        assert run_discovery(closed, tmp_path) == []


def test_elastic_launcher_starts_with_min_replicas_ready() -> None:
    job = make_job(elastic_spec(worker={"replicas": 3}, elastic={"minReplicas": 2}))
    one = observed_of(pod("worker", 0), *(pod("worker", i, ready=False) for i in (1, 2)))
    assert "hvd-launcher" not in by_name(KIND.render(job, one))
    assert KIND.interpret(job, one).reason == "WorkersNotReady"
    two = observed_of(pod("worker", 0), pod("worker", 1), pod("worker", 2, ready=False))
    assert "hvd-launcher" in by_name(KIND.render(job, two))
    assert KIND.interpret(job, two).reason == "LauncherCreating"


def test_elastic_launcher_command_argument_by_argument() -> None:
    job = make_job(
        elastic_spec(
            worker={"replicas": 3},
            elastic={"minReplicas": 2, "maxReplicas": 5, "resetLimit": 4},
            horovod={"networkInterfaces": ["eth0"], "startTimeout": 30, "glooTimeoutSeconds": 10},
        )
    )
    launcher = launcher_of(job, *(pod("worker", i) for i in range(3)))
    assert launcher["spec"]["containers"][0]["command"] == [
        "/bin/bash",
        "-c",
        ELASTIC_SCRIPT,
        "jobcore-horovod-launcher",
        "-np",
        "6",
        "--min-np",
        "4",
        "--max-np",
        "10",
        "--slots-per-host",
        "2",
        "--host-discovery-script",
        "/etc/horovod/discover_hosts.sh",
        "--reset-limit",
        "4",
        "--blacklist-cooldown-range",
        "1",
        "60",
        "--gloo",
        "--network-interfaces",
        "eth0",
        "--start-timeout",
        "30",
        "--gloo-timeout-seconds",
        "10",
        "python",
        "train.py",
        "--epochs",
        "3",
    ]
    volume = next(v for v in launcher["spec"]["volumes"] if v["name"] == "jobcore-horovod")
    assert volume["configMap"] == {"name": "hvd-discovery", "defaultMode": 0o755}
    no_limit = make_job(elastic_spec(elastic={"resetLimit": None}))
    assert "--reset-limit" not in horovodrun_args(no_limit)


def test_elastic_render_scales_and_leaves_ended_workers_out() -> None:
    job = make_job(elastic_spec(worker={"replicas": 3}))
    pods = (
        pod("worker", 0),
        pod("worker", 1, phase="Failed", ready=False),
        pod("worker", 2),
        pod("worker", 3),  # scaled down: not rendered, so deleted
        pod("launcher"),
    )
    names = [
        o["metadata"]["name"] for o in KIND.render(job, observed_of(*pods)) if o["kind"] == "Pod"
    ]
    assert names == ["hvd-worker-0", "hvd-worker-2", "hvd-launcher"]
    # Once the failed pod is gone it is rendered again, and so recreated.
    again = [p for p in pods if p["metadata"]["name"] != "hvd-worker-1"]
    names = [
        o["metadata"]["name"] for o in KIND.render(job, observed_of(*again)) if o["kind"] == "Pod"
    ]
    assert names == ["hvd-worker-0", "hvd-worker-1", "hvd-worker-2", "hvd-launcher"]
    # A static job keeps its failed worker: it fails the job instead.
    static = [
        o["metadata"]["name"]
        for o in KIND.render(make_job(base_spec(worker={"replicas": 3})), observed_of(*pods))
    ]
    assert "hvd-worker-1" in static


# Interpretation ------------------------------------------------------------------------------


def test_launcher_exit_decides() -> None:
    job = make_job()
    workers = (pod("worker", 0), pod("worker", 1))
    done = pod("launcher", phase="Succeeded", containers=[terminated("launcher", 0, "Completed")])
    assert KIND.interpret(job, observed_of(*workers, done)) == Outcome(
        "succeeded", "Succeeded", "The job has finished successfully."
    )
    failed = pod("launcher", phase="Failed", ready=False, containers=[terminated("launcher", 3)])
    for spec in (base_spec(), elastic_spec()):
        outcome = KIND.interpret(make_job(spec), observed_of(*workers, failed))
        assert (outcome.state, outcome.reason) == ("failed", "Failed")
        assert outcome.replica_failure == (
            "Pod[hvd-launcher] exited with error code 3 (container launcher)"
        )
    oom = pod("launcher", phase="Failed", containers=[terminated("launcher", 137, "OOMKilled")])
    outcome = KIND.interpret(job, observed_of(*workers, oom))
    assert outcome.replica_failure == (
        "Pod[hvd-launcher] exited with error code 137 (container launcher, OOMKilled)"
    )


def test_a_static_jobs_failed_worker_fails_it_an_elastic_jobs_does_not() -> None:
    lost = pod("worker", 1, phase="Failed", ready=False, containers=[terminated("worker", 137)])
    pods = observed_of(pod("worker", 0), lost, pod("launcher"))
    outcome = KIND.interpret(make_job(), pods)
    assert outcome.state == "failed"
    assert outcome.message == "A worker stopped before the launcher finished."
    assert outcome.replica_failure == (
        "Pod[hvd-worker-1] exited with error code 137 (container worker)"
    )
    assert KIND.interpret(make_job(elastic_spec()), pods) == Outcome(
        "running", "Running", "1 of 2 worker(s) Ready for horovodrun to use."
    )


def test_pending_and_running_say_why() -> None:
    job = make_job()
    assert KIND.interpret(job, observed_of()).reason == "WorkersCreating"
    unready = observed_of(pod("worker", 0), pod("worker", 1, ready=False))
    outcome = KIND.interpret(job, unready)
    assert (outcome.state, outcome.reason) == ("pending", "WorkersNotReady")
    assert "hvd-worker-1" in outcome.message
    starting = observed_of(pod("worker", 0), pod("worker", 1), pod("launcher", phase="Pending"))
    assert KIND.interpret(job, starting).reason == "LauncherPending"
    stuck = pod(
        "worker",
        1,
        phase="Pending",
        ready=False,
        containers=[{"name": "worker", "state": {"waiting": {"reason": "ImagePullBackOff"}}}],
    )
    outcome = KIND.interpret(job, observed_of(pod("worker", 0), stuck, pod("launcher")))
    assert outcome.state == "running"
    assert outcome.replica_failure == (
        "Pod[hvd-worker-1] container worker is waiting: ImagePullBackOff"
    )


# The launcher script ---------------------------------------------------------------------


@pytest.fixture
def ssh_port() -> Iterator[int]:
    """A free port accepting TCP on 127.0.0.1, as a Ready worker's sshd would."""
    with accepting_connections(0) as port:
        yield port


def run_launcher(
    tmp_path: Path, command: list[str], port: int, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The static launcher's command, waiting for 127.0.0.1 on `port`; horovodrun prints its
    arguments."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("127.0.0.1 slots=2\n")
    return run_command(
        command,
        tmp_path,
        programs={"horovodrun": '#!/bin/bash\nprintf "%s\\n" "$@"\n'},
        env={
            "JOBCORE_HOROVOD_HOSTFILE": str(hostfile),
            "JOBCORE_HOROVOD_WAIT_SECONDS": "5",
            SSH_PORT_ENV: str(port),
            **(env or {}),
        },
    )


def test_static_launcher_script_execs_horovodrun_with_arguments_intact(
    tmp_path: Path, ssh_port: int
) -> None:
    command = launcher_command(make_job())
    result = run_launcher(tmp_path, command, ssh_port)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-len(command[4:]) :] == command[4:]


def test_with_mpi_the_launcher_refuses_variables_open_mpi_would_copy_unsafely(
    tmp_path: Path, ssh_port: int
) -> None:
    """From valueFrom, envFrom or the image: validation cannot see them; the script checks."""
    hostile = {"OMPI_MCA_plm_rsh_agent": "ssh $(id)", "OPAL_PREFIX": "/opt/a b"}
    mpi = launcher_command(make_job(base_spec(horovod={"backend": "mpi"})))
    refused = run_launcher(tmp_path, mpi, ssh_port, hostile)
    assert refused.returncode == UNSAFE_ENV_EXIT
    assert refused.stderr.startswith(
        "jobcore: not starting horovodrun: unsafe for the workers' shell: "
        "OMPI_MCA_plm_rsh_agent OPAL_PREFIX (Open MPI writes these variables"
    )
    assert refused.stdout == ""
    # gloo starts no Open MPI.
    gloo = run_launcher(tmp_path, launcher_command(make_job()), ssh_port, hostile)
    assert gloo.returncode == 0, gloo.stderr


# What a stand-in horovodrun's Python says it was started with: the default socket timeout
# and its arguments, one per line.
FAKE_HOROVOD_LAUNCH = """\
import socket
import sys


def run_commandline():
    print(socket.getdefaulttimeout())
    print("\\n".join(sys.argv))
"""


def test_elastic_horovodrun_runs_with_a_socket_timeout_and_arguments_intact(
    tmp_path: Path,
) -> None:
    """Its connect to a deleted rank 0 fails in seconds, not after minutes of SYN retries."""
    package = tmp_path / "site" / "horovod" / "runner"
    package.mkdir(parents=True)
    for folder in (package.parent, package):
        (folder / "__init__.py").write_text("")
    (package / "launch.py").write_text(FAKE_HOROVOD_LAUNCH)
    command = launcher_command(make_job(elastic_spec()))
    result = run_command(
        [*command, "it's $(id)"],
        tmp_path,
        programs={"horovodrun": f"#!{sys.executable}\nraise SystemExit('not run')\n"},
        env={"PYTHONPATH": str(tmp_path / "site")},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("jobcore: starting: horovodrun -np 4 --min-np 2 ")
    assert lines[1] == str(float(SOCKET_TIMEOUT_SECONDS))
    assert lines[2:] == ["horovodrun", *command[4:], "it's $(id)"]


def test_an_elastic_horovodrun_that_is_no_python_script_runs_as_it_is(tmp_path: Path) -> None:
    command = launcher_command(make_job(elastic_spec()))
    result = run_command(
        command, tmp_path, programs={"horovodrun": '#!/bin/bash\nprintf "%s\\n" "$@"\n'}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == command[4:]
    assert "is not a Python script; starting it without a socket timeout" in result.stderr


def test_an_elastic_launcher_without_horovodrun_says_so(tmp_path: Path) -> None:
    command = launcher_command(make_job(elastic_spec()))
    result = run_command(command, tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert (result.returncode, result.stderr) == (127, "jobcore: no horovodrun on PATH\n")


def test_static_launcher_script_gives_up_on_unresolvable_workers(tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("nowhere-worker-0.hvd.ns.svc.invalid slots=2\n")
    result = run_command(
        launcher_command(make_job()),
        tmp_path,
        env={"JOBCORE_HOROVOD_HOSTFILE": str(hostfile), "JOBCORE_HOROVOD_WAIT_SECONDS": "1"},
    )
    assert result.returncode == SSH_WAIT_TIMEOUT_EXIT
    assert "gave up after 1s" in result.stderr


# Samples ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("horovodjob-*.yaml")), ids=lambda p: p.name)
def test_samples_are_valid(path: Path) -> None:
    obj = yaml.safe_load(path.read_text())
    assert (obj["apiVersion"], obj["kind"]) == ("batch.tensorstack.dev/v1beta1", "HorovodJob")
    assert errors_of(obj["spec"], name=obj["metadata"]["name"]) == {}
