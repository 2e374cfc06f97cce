"""The MPIJob kind on plain objects: API shape, validation, children, outcomes, launcher script."""

from __future__ import annotations

import copy
import dataclasses
import re
import socket
import subprocess
from collections.abc import Iterator
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from jobcore import Object
from jobcore._jobs.plan import plan
from jobcore.jobs import RUN_MODE_LABEL
from jobcore.jobs import Observed
from jobcore.jobs import Outcome
from jobcore.jobs import run_mode_errors
from jobcore.launcher import SSH_PORT
from jobcore.launcher import SSH_PORT_ENV
from jobcore.launcher import generate_keypair
from jobcore.launcher import path_errors
from jobcore.testing import accepting_connections
from jobcore.testing import by_name
from jobcore.testing import container_named
from jobcore.testing import env_list
from jobcore.testing import error_messages
from jobcore.testing import is_subset
from jobcore.testing import observed_of
from jobcore.testing import run_command
from jobcore.testing import secret_text
from jobcore.testing import spec_with
from jobcore.testing import terminated
from jobcore.testing import waiting
from jobkinds.mpi import openmpi
from jobkinds.mpi.flavours import MPICH
from jobkinds.mpi.flavours import OPEN_MPI
from jobkinds.mpi.flavours import Flavour
from jobkinds.mpi.flavours import hostfile_text
from jobkinds.mpi.mpirun import LAUNCHER_SCRIPT
from jobkinds.mpi.mpirun import WAIT_TIMEOUT_EXIT
from jobkinds.mpi.mpirun import launcher_command
from jobkinds.mpi.openmpi import UNSAFE_ENV_EXIT
from jobkinds.mpijob import MPIJobKind
from jobkinds.mpijob.spec import MPIJobSpec
from tests.support.builders import JobMaker
from tests.support.jobdocs import sample

NS = "team-a"

KIND = MPIJobKind()


def seed_spec() -> dict[str, Any]:
    """The first example of the T9k MPIJob guide (seed 000), as the random-walk sample has it."""
    spec: dict[str, Any] = sample("mpijob-random-walk")["spec"]
    return spec


make_job = JobMaker(KIND, seed_spec, name="mpi-example", namespace=NS)


def with_spec(**changes: Any) -> dict[str, Any]:
    """The seed spec with nested changes, e.g. `worker={"extraMPIArgs": [...]}`."""
    return spec_with(seed_spec(), **changes)


pod = make_job.pod


def workers(n: int = 5, *, ready: bool = True, **kwargs: Any) -> dict[str, Object]:
    names = [f"mpi-example-worker-{i}" for i in range(n)]
    return {name: pod(name, "worker", i, ready=ready, **kwargs) for i, name in enumerate(names)}


def observed(pods: Mapping[str, Object] | None = None, *others: Object) -> Observed:
    return observed_of(*(pods or {}).values(), *others)


def launcher(**kwargs: Any) -> dict[str, Object]:
    return {"mpi-example-launcher": pod("mpi-example-launcher", "launcher", 0, **kwargs)}


# API ------------------------------------------------------------------------------------


def test_seed_example_round_trips_with_the_seed_field_names() -> None:
    raw = seed_spec()
    raw["worker"]["template"]["metadata"] = {"annotations": {"team": "a"}}
    raw["worker"]["template"]["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    raw["worker"]["template"]["spec"]["containers"][0]["securityContext"] = {"privileged": False}
    spec = MPIJobSpec.model_validate(raw)
    assert spec.worker.extra_mpi_args[:2] == ["-N", "3"]
    assert spec.mpi_home == "/usr/local"
    assert spec.run_policy.clean_up_workers is True
    dumped = spec.to_api()
    assert is_subset(raw, dumped), dumped
    assert "extraMPIArgs" in dumped["worker"]
    assert dumped["ssh"] == {
        "sshdPath": "/usr/sbin/sshd",
        "sshAuthMountPath": "/root/.ssh",
        "port": 22,
    }
    assert MPIJobSpec.model_validate(dumped) == spec


def test_schema_rejects_what_the_api_forbids() -> None:
    for broken in (
        with_spec(worker={"replicas": 0}),
        with_spec(worker={"cmd": []}),
        with_spec(worker={"extraMpiArgs": ["-N", "2"]}),  # the wire name is extraMPIArgs
    ):
        with pytest.raises(ValueError):
            MPIJobSpec.model_validate(broken)


# Validation -----------------------------------------------------------------------------


def errors_of(spec: Mapping[str, Any], name: str = "mpi-example") -> dict[str, str]:
    return error_messages(KIND.validate(make_job(spec, name)))


def test_seed_example_is_valid() -> None:
    assert KIND.validate(make_job()) == []


def test_validation_catches_what_would_fail_later() -> None:
    """What only an MPIJob has; test_ssh_rendering checks what every ssh kind has."""
    spec = with_spec(mpiHome="usr/local", mca={"btl tcp": "x"})
    spec["worker"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "x", "mountPath": "/etc/mpi"}
    ]
    assert set(errors_of(spec)) == {
        "spec.mpiHome",
        "spec.mca.btl tcp",
        "spec.worker.template.spec.containers[0].volumeMounts[0].mountPath",
    }


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["-N"], "got nothing"),
        (["-N", "three"], "'three'"),
        (["--npernode", "0"], "'0'"),
        (["-npernode=-1"], "'-1'"),
        (["--hostfile", "/tmp/h"], "hostfile itself"),
        (["--prefix", "/opt/mpi"], "spec.mpiHome"),
    ],
)
def test_extra_mpi_args_a_user_would_trip_on(args: list[str], problem: str) -> None:
    errors = errors_of(with_spec(worker={"extraMPIArgs": args}))
    assert list(errors) == ["spec.worker.extraMPIArgs"]
    assert problem in errors["spec.worker.extraMPIArgs"]


PATH_CHARACTERS = "letters, digits and . _ + @ = : , / - only"
MCA_CHARACTERS = "letters, digits, spaces and . _ + @ % = : , / ^ -"
MPI_WORKER = "spec.worker.template.spec.containers[0]"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("mpiHome", "/opt/ompi;id>/tmp/pwned;"),
        ("ssh", {"sshdPath": "/usr/sbin/sshd $(id)"}),
        ("ssh", {"sshAuthMountPath": "/home/%u/.ssh"}),
    ],
)
def test_paths_a_shell_or_ssh_would_read_are_refused_naming_the_characters(
    field: str, value: Any
) -> None:
    errors = errors_of(with_spec(**{field: value}))
    path = f"spec.{field}" if field == "mpiHome" else f"spec.ssh.{next(iter(value))}"
    assert list(errors) == [path]
    assert PATH_CHARACTERS in errors[path]
    assert repr(value if field == "mpiHome" else next(iter(value.values()))) in errors[path]


def test_open_mpis_run_time_check_of_prefix_paths_is_validations_rule() -> None:
    printable = [chr(c) for c in range(32, 127)]
    accepted = [c for c in printable if re.fullmatch(f"[{openmpi.PATH_CLASS}]", c)]
    assert accepted == [c for c in printable if not path_errors({"p": f"/{c}"})]
    assert openmpi.PATH_CHARACTERS in str(path_errors({"p": "/;"})[0])


def test_the_current_shapes_home_is_named_as_written() -> None:
    spec: dict[str, Any] = {
        "replicaSpecs": [{"type": "worker", "template": seed_spec()["worker"]["template"]}],
        "mpiConfig": {"home": "/opt/ompi`id`", "script": ["./prog"]},
    }
    spec["replicaSpecs"][0]["template"]["spec"]["containers"][0]["name"] = "worker"
    errors = errors_of(spec)
    assert list(errors) == ["spec.mpiConfig.home"]
    assert "'/opt/ompi`id`'" in errors["spec.mpiConfig.home"]


@pytest.mark.parametrize(
    ("changes", "field", "shown"),
    [
        ({"mca": {"btl": "tcp$(id)"}}, "spec.mca.btl", "'tcp$(id)'"),
        (
            {"worker": {"extraMPIArgs": ["-mca", "btl", "`id`"]}},
            "spec.worker.extraMPIArgs",
            "-mca btl",
        ),
        ({"worker": {"extraMPIArgs": ["--gmca", "a;b", "1"]}}, "spec.worker.extraMPIArgs", "'a;b'"),
        (
            {"worker": {"extraMPIArgs": ["--launch-agent", "orted;id"]}},
            "spec.worker.extraMPIArgs",
            "--launch-agent",
        ),
        ({"worker": {"extraMPIArgs": ["-am", 'x"y']}}, "spec.worker.extraMPIArgs", "-am"),
        (
            {"mpiHome": None, "worker": {"extraMPIArgs": ["--prefix=/x;id"]}},
            "spec.worker.extraMPIArgs",
            "--prefix",
        ),
    ],
)
def test_what_open_mpi_copies_into_its_daemons_shell_command_is_checked(
    changes: dict[str, Any], field: str, shown: str
) -> None:
    errors = errors_of(with_spec(**changes))
    assert list(errors) == [field]
    assert shown in errors[field]
    assert "shell" in errors[field]


def test_open_mpi_variables_and_the_working_directory_of_the_template_are_checked() -> None:
    spec = seed_spec()
    container = spec["worker"]["template"]["spec"]["containers"][0]
    container["workingDir"] = "/code/$(id)"
    container["env"] = env_list(
        {
            "NOTE": "$(not Open MPI's)",
            "OMPI_MCA_btl": "tcp;`id`",
            "PRTE_MCA_a;b": "1",
            "OPAL_PREFIX": "/opt/ompi $(id)",
        }
    )
    errors = errors_of(spec)
    assert set(errors) == {
        f"{MPI_WORKER}.workingDir",
        f"{MPI_WORKER}.env[1].value",
        f"{MPI_WORKER}.env[2].name",
        f"{MPI_WORKER}.env[3].value",
    }
    assert MCA_CHARACTERS in errors[f"{MPI_WORKER}.env[1].value"]
    assert "'PRTE_MCA_a;b'" in errors[f"{MPI_WORKER}.env[2].name"]
    assert "'/opt/ompi $(id)'" in errors[f"{MPI_WORKER}.env[3].value"]
    spec["mca"], spec["mpiImplementation"] = {}, "MPICH"  # Hydra copies none of them
    assert errors_of(spec) == {}


def test_long_names_and_unknown_replica_types_are_rejected() -> None:
    assert "exceeds 63" in errors_of(seed_spec(), name="j" * 55)["metadata.name"]
    spec = with_spec(runMode={"debug": {"enabled": True, "replicaSpecs": [{"type": "master"}]}})
    errors = run_mode_errors(make_job(spec).spec, KIND.replica_types)
    assert [e.path for e in errors] == ["spec.runMode.debug.replicaSpecs[0].type"]


# Rendering ------------------------------------------------------------------------------


def test_render_before_workers_are_ready_has_no_launcher() -> None:
    job = make_job()
    for pods in ({}, workers(ready=False), {**workers(), "mpi-example-worker-2": pod("x", "w")}):
        objects = KIND.render(job, observed(pods))
        kinds = [o["kind"] for o in objects]
        names = [o["metadata"]["name"] for o in objects]
        assert kinds == ["Secret", "ConfigMap", "Service"] + ["Pod"] * 5
        assert names[:3] == ["mpi-example-ssh", "mpi-example-hostfile", "mpi-example"]
        assert names[3:] == [f"mpi-example-worker-{i}" for i in range(5)]


def test_render_adds_the_launcher_once_every_worker_is_ready() -> None:
    objects = KIND.render(make_job(), observed(workers()))
    assert [o["metadata"]["name"] for o in objects][-1] == "mpi-example-launcher"
    assert len(objects) == 9


def test_through_the_agent_the_launcher_starts_with_its_scheduled_workers() -> None:
    """`jobcore-agent launch` waits for the agents itself: its pod need not wait for Ready."""
    job = make_job(with_spec(transport="agent"))
    starting = workers(ready=False)
    assert by_name(KIND.render(job, observed(starting))).keys() >= {"mpi-example-launcher"}
    starting["mpi-example-worker-4"]["spec"] = {}  # not yet bound to a node
    assert "mpi-example-launcher" not in by_name(KIND.render(job, observed(starting)))


def test_render_keeps_an_existing_launcher() -> None:
    pods = {**workers(), **launcher()}
    pods["mpi-example-worker-3"] = pod("mpi-example-worker-3", "worker", 3, ready=False)
    objects = KIND.render(make_job(), observed(pods))
    assert objects[-1]["metadata"]["name"] == "mpi-example-launcher"


def test_every_object_is_labelled_and_namespaced_and_unowned() -> None:
    job = make_job()
    for obj in KIND.render(job, observed(workers())):
        meta = obj["metadata"]
        assert obj["apiVersion"] == "v1"
        assert meta["namespace"] == NS
        assert job.labels().items() <= meta["labels"].items()
        assert "ownerReferences" not in meta
    pods = by_name(KIND.render(job, observed(workers())))
    assert pods["mpi-example-worker-4"]["metadata"]["labels"] == job.labels("worker", 4)
    assert pods["mpi-example-launcher"]["metadata"]["labels"] == job.labels("launcher", 0)


def test_hostfile_lists_every_worker_with_its_slots() -> None:
    configmap = by_name(KIND.render(make_job(), observed()))["mpi-example-hostfile"]
    assert configmap["data"]["hostfile"].splitlines() == [
        f"mpi-example-worker-{i}.mpi-example.{NS}.svc.cluster.local slots=3" for i in range(5)
    ]
    one = by_name(KIND.render(make_job(with_spec(worker={"extraMPIArgs": []})), observed()))
    assert one["mpi-example-hostfile"]["data"]["hostfile"].endswith(".svc.cluster.local slots=1\n")


def test_service_is_headless_over_the_workers() -> None:
    job = make_job()
    service = by_name(KIND.render(job, observed()))["mpi-example"]["spec"]
    assert service["clusterIP"] == "None"
    assert service["selector"] == job.labels("worker")
    assert service["publishNotReadyAddresses"] is True
    assert service["ports"] == [{"name": "ssh", "port": 22, "targetPort": 22}]


def test_workers_run_sshd_in_place_of_the_template_command() -> None:
    spec = seed_spec()
    spec["worker"]["template"]["metadata"] = {"labels": {"app": "mpi"}}
    main = spec["worker"]["template"]["spec"]["containers"][0]
    main.update(command=["python"], args=["train.py"])
    spec["worker"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "s"})
    worker = by_name(KIND.render(make_job(spec), observed()))["mpi-example-worker-1"]
    assert worker["metadata"]["labels"]["app"] == "mpi"
    pod_spec = worker["spec"]
    assert (pod_spec["hostname"], pod_spec["subdomain"]) == ("mpi-example-worker-1", "mpi-example")
    assert pod_spec["restartPolicy"] == "Never"
    mpi = container_named(worker, "mpi-worker")
    assert mpi["command"][:3] == ["/usr/sbin/sshd", "-D", "-e"]
    assert "args" not in mpi
    assert mpi["readinessProbe"]["tcpSocket"] == {"port": 22}
    assert {"name": "jobcore-ssh", "mountPath": "/root/.ssh", "readOnly": True} in mpi[
        "volumeMounts"
    ]
    assert {
        "name": "jobcore-ssh",
        "secret": {"secretName": "mpi-example-ssh", "defaultMode": 0o600},
    } in pod_spec["volumes"]
    assert container_named(worker, "sidecar") == {"name": "sidecar", "image": "s"}
    spec["worker"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    worker = by_name(KIND.render(make_job(spec), observed()))["mpi-example-worker-0"]
    assert worker["spec"]["restartPolicy"] == "OnFailure"


def launcher_of(spec: Mapping[str, Any] | None = None) -> Object:
    return by_name(KIND.render(make_job(spec), observed(workers())))["mpi-example-launcher"]


def test_launcher_runs_mpirun_with_the_spec_in_order() -> None:
    command = container_named(launcher_of(), "mpi-launcher")["command"]
    assert command[:2] == ["/bin/bash", "-c"]
    args = command[4:]
    assert args[:3] == ["mpirun", "--hostfile", "/etc/mpi/hostfile"]
    assert args[3:5] == ["--prefix", "/usr/local"]
    assert args[5:8] == ["-mca", "btl", "^openib"]
    spec = seed_spec()
    assert args[8:] == spec["worker"]["extraMPIArgs"] + spec["worker"]["cmd"]
    assert 'exec "$@"' in command[2]


def test_launcher_mca_sorted_env_forwarded_and_no_prefix_without_mpi_home() -> None:
    spec = with_spec(mca={"pml": "ob1", "btl": "^openib"})
    del spec["mpiHome"]
    spec["worker"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "NCCL_DEBUG", "value": "INFO"},
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-p 2222"},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    command = container_named(launcher_of(spec), "mpi-launcher")["command"]
    assert "--prefix" not in command
    assert command[7:13] == ["-mca", "btl", "^openib", "-mca", "pml", "ob1"]
    assert command[13:17] == ["-x", "NCCL_DEBUG", "-x", "OMPI_MCA_plm_rsh_args"]
    assert command[17:19] == ["-N", "3"]  # a pod's own fieldRef is not forwarded
    assert "POD_IP" not in command
    env = container_named(launcher_of(spec), "mpi-launcher")["env"]
    values = {e["name"]: e.get("value") for e in env}
    assert values["OMPI_MCA_plm_rsh_args"] == "-p 2222"  # the user's value wins
    assert [e["name"] for e in env].count("OMPI_MCA_plm_rsh_args") == 1


def test_launcher_copies_the_worker_container_and_mounts_keys_and_hostfile() -> None:
    pod_ = launcher_of()
    assert pod_["spec"]["restartPolicy"] == "Never"
    assert [c["name"] for c in pod_["spec"]["containers"]] == ["mpi-launcher"]
    main = container_named(pod_, "mpi-launcher")
    template = seed_spec()["worker"]["template"]["spec"]["containers"][0]
    assert main["image"] == template["image"]
    assert main["resources"] == template["resources"]
    assert main["workingDir"] == "/usr/local/code"
    assert "readinessProbe" not in main
    mounts = {m["mountPath"]: m["name"] for m in main["volumeMounts"]}
    assert mounts == {"/root/.ssh": "jobcore-ssh", "/etc/mpi": "jobcore-hostfile"}
    volumes = {v["name"]: v for v in pod_["spec"]["volumes"]}
    assert volumes["jobcore-ssh"]["secret"]["defaultMode"] == 0o600
    assert volumes["jobcore-hostfile"]["configMap"] == {"name": "mpi-example-hostfile"}
    env = {e["name"]: e["value"] for e in main["env"]}
    for name in ("OMPI_MCA_orte_default_hostfile", "PRTE_MCA_prte_default_hostfile"):
        assert env[name] == "/etc/mpi/hostfile"
    assert env["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
    assert env["PRTE_MCA_prte_keep_fqdn_hostnames"] == "true"
    assert env["OMPI_MCA_orte_set_default_slots"] == env["PRTE_MCA_prte_set_default_slots"] == "3"
    for name in ("OMPI_MCA_plm_rsh_args", "PRTE_MCA_plm_ssh_args"):
        assert env[name] == (
            "-o ConnectionAttempts=10 -i /root/.ssh/id_ed25519 -p 22 "
            "-o StrictHostKeyChecking=yes -o UserKnownHostsFile=/root/.ssh/known_hosts "
            "-o LogLevel=ERROR"
        )
    assert env["JOBCORE_SSH_PORT"] == "22"


def test_a_gang_gets_its_launcher_at_once() -> None:
    job = dataclasses.replace(make_job(), gang=True)
    assert "mpi-example-launcher" in by_name(KIND.render(job, observed()))


def test_debug_mode_starts_the_launcher_at_once_with_sleep_and_workers_keep_sshd() -> None:
    job = make_job(with_spec(runMode={"debug": {"enabled": True}}))
    objects = by_name(plan(KIND, job, observed()))
    launcher_pod = objects["mpi-example-launcher"]
    assert container_named(launcher_pod, "mpi-launcher")["command"] == ["sleep", "inf"]
    assert launcher_pod["metadata"]["labels"][RUN_MODE_LABEL] == "debug"
    worker = container_named(objects["mpi-example-worker-0"], "mpi-worker")
    assert worker["command"][:3] == ["/usr/sbin/sshd", "-D", "-e"]
    assert worker["readinessProbe"]["tcpSocket"] == {"port": 22}


def test_debug_commands_replace_sshd_and_can_skip_init_containers() -> None:
    spec = with_spec(
        runMode={
            "debug": {
                "enabled": True,
                "replicaSpecs": [
                    {"type": "worker", "skipInitContainer": True, "command": ["sleep", "inf"]}
                ],
            }
        }
    )
    spec["worker"]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "i"}]
    objects = by_name(plan(KIND, make_job(spec), observed()))
    assert "initContainers" in objects["mpi-example-launcher"]["spec"]
    worker = objects["mpi-example-worker-0"]
    assert container_named(worker, "mpi-worker")["command"] == ["sleep", "inf"]
    assert "readinessProbe" not in container_named(worker, "mpi-worker")
    assert "initContainers" not in worker["spec"]


def test_paused_job_has_no_pods() -> None:
    job = make_job(with_spec(runMode={"pause": {"enabled": True}}))
    objects = plan(KIND, job, observed({**workers(), **launcher()}))
    assert [o["kind"] for o in objects] == ["Secret", "ConfigMap", "Service"]


# The ssh Secret -------------------------------------------------------------------------


def test_a_new_job_gets_a_fresh_valid_keypair() -> None:
    first = secret_text(KIND.render(make_job(), observed())[0])
    second = secret_text(KIND.render(make_job(), observed())[0])
    assert first["id_ed25519"] != second["id_ed25519"]
    private = serialization.load_ssh_private_key(first["id_ed25519"].encode(), password=None)
    public = serialization.load_ssh_public_key(first["id_ed25519.pub"].encode())
    assert isinstance(private, Ed25519PrivateKey)
    assert isinstance(public, Ed25519PublicKey)
    assert private.public_key() == public
    assert first["id_ed25519"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert first["id_ed25519.pub"].startswith("ssh-ed25519 AAAA")
    assert first["id_ed25519.pub"].strip().endswith(" jobcore")
    assert first["authorized_keys"] == first["id_ed25519.pub"]
    host = serialization.load_ssh_private_key(first["ssh_host_ed25519_key"].encode(), None)
    assert isinstance(host, Ed25519PrivateKey)
    assert host.public_key() != private.public_key()
    # Every name, address and port of a worker matches; only the job's host key passes.
    pattern, host_public = first["known_hosts"].rstrip("\n").split(" ", 1)
    assert pattern == "*"
    assert serialization.load_ssh_public_key(host_public.encode()) == host.public_key()
    assert first["config"] == (
        "Host *\n"
        "    Port 22\n"
        "    StrictHostKeyChecking yes\n"
        "    UserKnownHostsFile /root/.ssh/known_hosts\n"
        "    LogLevel ERROR\n"
    )


def test_an_existing_secret_is_reused_unchanged() -> None:
    existing = KIND.render(make_job(), observed())[0]
    existing["metadata"]["resourceVersion"] = "42"
    snapshot = copy.deepcopy(existing)
    again = KIND.render(make_job(), observed(workers(), existing))[0]
    assert again == snapshot
    assert secret_text(again)["id_ed25519"] == secret_text(snapshot)["id_ed25519"]


def test_generate_keypair_matches() -> None:
    private, public = generate_keypair()
    key = serialization.load_ssh_private_key(private.encode(), password=None)
    line = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert public == f"{line.decode()} jobcore"


# Outcomes -------------------------------------------------------------------------------


def interpret(pods: Mapping[str, Object]) -> Outcome:
    return KIND.interpret(make_job(), observed(pods))


def test_launcher_exit_zero_succeeds() -> None:
    pods = {**workers(), **launcher(phase="Succeeded", containers=[terminated("mpi-launcher", 0)])}
    outcome = interpret(pods)
    assert outcome.state == "succeeded"
    assert outcome.message == "The job has finished successfully."
    assert outcome.replica_failure is None


def test_launcher_error_fails_naming_pod_and_code() -> None:
    pods = {**workers(), **launcher(phase="Failed", containers=[terminated("mpi-launcher", 3)])}
    outcome = interpret(pods)
    assert outcome.state == "failed"
    assert outcome.replica_failure == (
        "Pod[mpi-example-launcher] exited with error code 3 (container mpi-launcher)"
    )


def test_launcher_oom_and_eviction_are_named() -> None:
    oom = launcher(phase="Failed", containers=[terminated("mpi-launcher", 137, "OOMKilled")])
    outcome = interpret({**workers(), **oom})
    assert outcome.replica_failure == (
        "Pod[mpi-example-launcher] exited with error code 137 (container mpi-launcher, OOMKilled)"
    )
    evicted = launcher(
        phase="Failed", reason="Evicted", message="The node was low on resource: memory."
    )
    outcome = interpret({**workers(), **evicted})
    assert outcome.state == "failed"
    assert outcome.replica_failure == (
        "Pod[mpi-example-launcher] failed: Evicted: The node was low on resource: memory."
    )


def test_a_failed_worker_fails_the_job_before_the_launcher_ends() -> None:
    pods = {**workers(), **launcher(ready=True)}
    pods["mpi-example-worker-2"] = pod(
        "mpi-example-worker-2",
        "worker",
        2,
        phase="Failed",
        containers=[terminated("mpi-worker", 255, message="sshd: no hostkeys available")],
    )
    outcome = interpret(pods)
    assert outcome.state == "failed"
    assert outcome.replica_failure == (
        "Pod[mpi-example-worker-2] exited with error code 255 (container mpi-worker): "
        "sshd: no hostkeys available"
    )
    before_launch = {k: v for k, v in pods.items() if "launcher" not in k}
    assert interpret(before_launch).state == "failed"


def test_waiting_errors_are_reported_without_failing() -> None:
    pods = workers(ready=False)
    pods["mpi-example-worker-0"]["status"]["containerStatuses"] = [
        waiting("mpi-worker", "ImagePullBackOff", 'Back-off pulling image "nope"')
    ]
    outcome = interpret(pods)
    assert outcome.state == "pending"
    assert outcome.replica_failure == (
        "Pod[mpi-example-worker-0] container mpi-worker is waiting: "
        'ImagePullBackOff: Back-off pulling image "nope"'
    )
    running = {**workers(), **launcher(ready=True)}
    running["mpi-example-worker-4"]["status"]["containerStatuses"] = [
        waiting("sidecar", "CreateContainerConfigError", 'secret "x" not found')
    ]
    outcome = interpret(running)
    assert outcome.state == "running"
    assert outcome.replica_failure is not None
    assert "CreateContainerConfigError" in outcome.replica_failure


def test_unschedulable_worker_is_reported() -> None:
    pods = workers(ready=False)
    pods["mpi-example-worker-1"]["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3"}
    ]
    outcome = interpret(pods)
    assert (outcome.state, outcome.replica_failure) == (
        "pending",
        "Pod[mpi-example-worker-1] is unschedulable: 0/3",
    )


def test_running_launcher_is_running() -> None:
    outcome = interpret({**workers(), **launcher(ready=True)})
    assert outcome == Outcome("running")


def test_pending_says_what_it_waits_for() -> None:
    assert interpret({}).reason == "WorkersCreating"
    pods = workers()
    for name in ("mpi-example-worker-1", "mpi-example-worker-3"):
        pods[name]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    outcome = interpret(pods)
    assert (outcome.state, outcome.reason) == ("pending", "WorkersNotReady")
    assert "mpi-example-worker-1, mpi-example-worker-3" in outcome.message
    assert outcome.replica_failure is None
    assert interpret(workers()).reason == "LauncherCreating"
    assert interpret({**workers(), **launcher(phase="Pending")}).reason == "LauncherPending"


# The launcher script --------------------------------------------------------------------


def run_script(
    tmp_path: Path,
    hosts: list[str],
    args: list[str],
    *,
    wait: int | str = 1,
    mpi_home: str = "",
    mpi: Flavour = OPEN_MPI,
    port: int = SSH_PORT,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(hostfile_text(hosts, 2, mpi))
    return run_command(
        launcher_command(args, mpi),
        tmp_path,
        programs={"mpirun": '#!/bin/bash\nprintf "%s\\n" "$@"\n'},
        env={
            "JOBCORE_MPI_HOSTFILE": str(hostfile),
            "JOBCORE_MPI_WAIT_SECONDS": str(wait),
            "JOBCORE_MPI_HOME": mpi_home,
            SSH_PORT_ENV: str(port),
            **(env or {}),
        },
    )


@pytest.mark.parametrize("mpi", [OPEN_MPI, MPICH], ids=["slots=N", "host:N"])
def test_script_gives_up_on_unresolvable_workers(tmp_path: Path, mpi: Flavour) -> None:
    result = run_script(tmp_path, ["nowhere-worker-0.mpi.ns.svc.invalid"], ["./prog"], mpi=mpi)
    assert result.returncode == WAIT_TIMEOUT_EXIT
    assert "waiting up to 1s for 1 worker(s)" in result.stdout
    assert "nowhere-worker-0.mpi.ns.svc.invalid does not resolve" in result.stdout
    assert "gave up after 1s: worker nowhere-worker-0.mpi.ns.svc.invalid" in result.stderr
    assert f"exit {WAIT_TIMEOUT_EXIT}" in LAUNCHER_SCRIPT


@pytest.fixture
def ssh_port() -> Iterator[int]:
    """A free port accepting TCP on 127.0.0.1, as a Ready worker's sshd would."""
    with accepting_connections(0) as port:
        yield port


def test_open_mpi_launcher_refuses_variables_it_would_copy_into_the_workers_shell(
    tmp_path: Path, ssh_port: int
) -> None:
    """What valueFrom, envFrom or the image bring, validation cannot see: the script checks."""
    canary = tmp_path / "canary"
    good = {"OMPI_MCA_btl": "^openib", "OPAL_PREFIX": "/opt/ompi", "NOTE": "$(not Open MPI's)"}
    hostile = {
        "OMPI_MCA_orte_launch_agent": f"orted;touch {canary}",
        "PRTE_MCA_a;b": "1",
        "PMIX_PREFIX": "/opt/$(id)",
    }
    args = ["mpirun", "./prog"]
    result = run_script(tmp_path, ["127.0.0.1"], args, port=ssh_port, env={**good, **hostile})
    assert result.returncode == UNSAFE_ENV_EXIT
    assert result.stdout == ""  # before the wait; mpirun never ran
    refusal = "jobcore: not starting mpirun: unsafe for the workers' shell: "
    assert result.stderr.startswith(refusal)
    named = result.stderr.removeprefix(refusal).split(" (Open MPI writes")[0].split()
    assert sorted(named) == ["OMPI_MCA_orte_launch_agent", "PMIX_PREFIX", "PRTE_MCA_a\\;b"]
    assert not canary.exists()
    started = run_script(tmp_path, ["127.0.0.1"], args, port=ssh_port, env=good)
    assert started.stdout.splitlines()[-1] == "./prog", started
    hydra = run_script(tmp_path, ["127.0.0.1"], args, port=ssh_port, env=hostile, mpi=MPICH)
    assert hydra.stdout.splitlines()[-1] == "./prog", hydra  # Hydra copies none of them


@pytest.mark.parametrize("wait", ["a[$(touch CANARY)]", "1+$(touch CANARY)", "0x10", "-1", "1 "])
def test_the_wait_time_is_digits_or_refused_and_never_evaluated(tmp_path: Path, wait: str) -> None:
    canary = tmp_path / "canary"
    result = run_script(
        tmp_path, ["127.0.0.1"], ["mpirun"], wait=wait.replace("CANARY", str(canary))
    )
    assert result.returncode == WAIT_TIMEOUT_EXIT, result
    assert "must be a whole number of seconds" in result.stderr
    assert not canary.exists()


def test_script_execs_mpirun_with_arguments_intact(tmp_path: Path, ssh_port: int) -> None:
    marker = tmp_path / "pwned"
    args = ["-N", "2", "./prog", "two words", f"$(touch {marker})", "'; exit 1; '"]
    result = run_script(tmp_path, ["127.0.0.1"], ["mpirun", *args], wait=10, port=ssh_port)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-len(args) :] == args
    assert not marker.exists()


def test_script_runs_the_launcher_from_mpi_home_first(tmp_path: Path, ssh_port: int) -> None:
    home = tmp_path / "mpi home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "mpiexec").write_text('#!/bin/bash\necho "home mpiexec $*"\n')
    (home / "bin" / "mpiexec").chmod(0o755)
    result = run_script(
        tmp_path, ["127.0.0.1"], ["mpiexec", "-f", "x"], wait=10, mpi_home=str(home), port=ssh_port
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "home mpiexec -f x"


def test_script_waits_for_a_closed_ssh_port(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago, and nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    result = run_script(tmp_path, ["127.0.0.1"], ["./prog"], port=closed)
    assert result.returncode == WAIT_TIMEOUT_EXIT
    assert f"worker 127.0.0.1 does not accept connections on port {closed}" in result.stderr
