"""The ColossalAIJob kind on plain objects: API shape, validation, children, outcomes, script."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from jobcore import Object
from jobcore._jobs.plan import plan
from jobcore.jobs import RUN_MODE_LABEL
from jobcore.jobs import Observed
from jobcore.jobs import Outcome
from jobcore.jobs import run_mode_errors
from jobcore.launcher import SSH_WAIT_TIMEOUT_EXIT
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
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.colossalaijob.children import LAUNCHER_SCRIPT
from jobkinds.colossalaijob.children import colossalai_args
from jobkinds.colossalaijob.children import extra_launch_args
from jobkinds.colossalaijob.children import launcher_command
from jobkinds.colossalaijob.spec import ColossalAIJobSpec
from tests.support.builders import JobMaker
from tests.support.jobdocs import sample

NS = "team-a"

KIND = ColossalAIJobKind()
JOB = "colossalai-example"
FQDN0 = f"{JOB}-worker-0.{JOB}.{NS}.svc.cluster.local"


def seed_spec() -> dict[str, Any]:
    """The first example of the T9k ColossalAIJob guide (seed 003), as its sample has it."""
    spec: dict[str, Any] = sample("colossalaijob-example")["spec"]
    return spec


make_job = JobMaker(KIND, seed_spec, name=JOB, namespace=NS)


def with_worker(**changes: Any) -> dict[str, Any]:
    return spec_with(seed_spec(), worker=changes)


pod = make_job.pod


def workers(n: int = 2, *, ready: bool = True) -> dict[str, Object]:
    return {
        f"{JOB}-worker-{i}": pod(f"{JOB}-worker-{i}", "worker", i, ready=ready) for i in range(n)
    }


def launcher(**kwargs: Any) -> dict[str, Object]:
    return {f"{JOB}-launcher": pod(f"{JOB}-launcher", "launcher", 0, **kwargs)}


def observed(pods: Mapping[str, Object] | None = None, *others: Object) -> Observed:
    return observed_of(*(pods or {}).values(), *others)


# API ------------------------------------------------------------------------------------


def test_seed_example_round_trips_with_its_wire_names() -> None:
    raw = seed_spec()
    spec = ColossalAIJobSpec.model_validate(raw)
    assert spec.ssh.auth_mount_path == "/root/.ssh"
    assert spec.launcher.working_dir == "/workspace"
    assert spec.worker.proc_per_worker == 1
    assert spec.worker.command == ["train.py", "arg1"]
    dumped = spec.to_api()
    assert is_subset(raw, dumped), dumped
    assert set(dumped["worker"]) >= {"procPerWorker", "torchArgs", "command", "template"}
    assert set(dumped["ssh"]) == {"authMountPath", "sshdPath", "port"}
    assert dumped["launcher"]["workingDir"] == "/workspace"
    assert ColossalAIJobSpec.model_validate(dumped) == spec


def test_defaults() -> None:
    spec = ColossalAIJobSpec.model_validate(
        {
            "launcher": {"image": "c"},
            "worker": {
                "command": ["t.py"],
                "template": {"spec": {"containers": [{"name": "worker", "image": "c"}]}},
            },
        }
    )
    assert (spec.ssh.auth_mount_path, spec.ssh.sshd_path) == ("/root/.ssh", "/usr/sbin/sshd")
    assert (spec.worker.replicas, spec.worker.proc_per_worker) == (1, 1)
    assert spec.worker.torch_args == []
    assert spec.launcher.env == []


@pytest.mark.parametrize(
    ("change", "loc"),
    [
        ({"worker": {"replicas": 0}}, ("worker", "replicas")),
        ({"worker": {"procPerWorker": 0}}, ("worker", "procPerWorker")),
        ({"worker": {"command": []}}, ("worker", "command")),
        ({"launcher": {"image": ""}}, ("launcher", "image")),
        ({"worker": {"torch_arg": []}}, ("worker", "torch_arg")),  # unknown: a typo
    ],
)
def test_schema_errors_name_the_wire_field(change: dict[str, Any], loc: tuple[str, ...]) -> None:
    spec = seed_spec()
    for key, value in change.items():
        spec[key].update(value)
    with pytest.raises(ValidationError) as error:
        ColossalAIJobSpec.model_validate(spec)
    assert [e["loc"] for e in error.value.errors()] == [loc]


def test_launcher_is_required() -> None:
    spec = seed_spec()
    del spec["launcher"]
    with pytest.raises(ValidationError):
        ColossalAIJobSpec.model_validate(spec)


# Validation -----------------------------------------------------------------------------


def worker_shell_reads(words: list[str]) -> list[str]:
    """The arguments a worker's shell makes of `words` joined with spaces, as colossalai run
    joins them into the command it runs there."""
    result = subprocess.run(
        ["/bin/sh", "-c", " ".join(["printf '%s\\0'", *words])],
        check=True,
        capture_output=True,
        text=True,
        timeout=10,
    )
    return result.stdout.split("\0")[:-1]


def errors_of(spec: Mapping[str, Any], name: str = JOB) -> dict[str, str]:
    return error_messages(KIND.validate(make_job(spec, name)))


def test_seed_example_is_valid() -> None:
    assert KIND.validate(make_job()) == []


def test_validation_catches_what_would_fail_later() -> None:
    """What only a ColossalAIJob has; test_ssh_rendering checks what every ssh kind has."""
    spec = with_worker(command=["train.sh"])
    spec["worker"]["template"]["spec"]["volumes"].append({"name": "jobcore-ssh", "emptyDir": {}})
    errors = errors_of(spec)
    assert set(errors) == {"spec.worker.command[0]", "spec.worker.template.spec.volumes[1].name"}
    assert "'train.sh'" in errors["spec.worker.command[0]"]


def test_what_colossalai_run_writes_into_the_workers_shell_is_checked() -> None:
    spec = seed_spec()
    spec["ssh"] = {"authMountPath": "/root/.ssh $(id)"}
    spec["launcher"]["workingDir"] = "/work/my project"
    spec["launcher"]["env"] = env_list({"A B": "1", "OK": "$(id)"})
    errors = errors_of(spec)
    assert set(errors) == {
        "spec.ssh.authMountPath",
        "spec.launcher.workingDir",
        "spec.launcher.env[0].name",
    }
    assert "letters, digits and . _ + @ = : , / - only" in errors["spec.launcher.workingDir"]
    assert "'/work/my project'" in errors["spec.launcher.workingDir"]
    assert "colossalai run writes it unquoted" in errors["spec.launcher.env[0].name"]


def test_torch_options_survive_the_shell_colossalai_run_joins_them_into(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    written = [f"--rdzv_id=$(touch {marker})", "--rdzv_endpoint=a b;c", "--standalone"]
    assert errors_of(with_worker(torchArgs=written)) == {}
    extra = extra_launch_args(written)
    assert extra is not None
    # colossalai run: split at "," and "=", then " ".join(["torchrun", "--k=v", ...]).
    options = [
        f"--{k}={v}" if v else f"--{k}" for k, _, v in (o.partition("=") for o in extra.split(","))
    ]
    assert worker_shell_reads(options) == written
    assert not marker.exists()


def test_a_mount_over_the_ssh_keys_is_rejected() -> None:
    spec = seed_spec()
    spec["worker"]["template"]["spec"]["containers"][0]["volumeMounts"].append(
        {"name": "code", "mountPath": "/root/.ssh/"}
    )
    assert list(errors_of(spec)) == [
        "spec.worker.template.spec.containers[0].volumeMounts[1].mountPath"
    ]


@pytest.mark.parametrize(
    ("arg", "problem"),
    [
        ("max_restarts=3", "--name=value or --name"),
        ("--max_restarts", None),
        ("--rdzv_conf=a=b", "no '=' or empty value"),
        ("--rdzv_conf=a,b", "no ','"),
        ("--max_restarts=", "empty value"),
        ("--", "--name=value or --name"),
        ("--nproc_per_node=2", "sets --nproc_per_node itself"),
        ("--master-port=1", "sets --master-port itself"),
        ("--nnodes=2", "sets --nnodes itself"),
    ],
)
def test_torch_args_must_fit_extra_launch_args(arg: str, problem: str | None) -> None:
    errors = errors_of(with_worker(torchArgs=["--standalone", arg]))
    if problem is None:
        assert errors == {}
    else:
        assert list(errors) == ["spec.worker.torchArgs[1]"]
        assert problem in errors["spec.worker.torchArgs[1]"]


def test_long_names_are_rejected() -> None:
    assert "exceeds 63" in errors_of(seed_spec(), name="j" * 55)["metadata.name"]


def test_run_modes_name_the_kinds_replica_types() -> None:
    spec = seed_spec()
    spec["runMode"] = {"pause": {"resumeSpecs": [{"type": "launcher"}, {"type": "master"}]}}
    errors = run_mode_errors(make_job(spec).spec, KIND.replica_types)
    assert [e.path for e in errors] == ["spec.runMode.pause.resumeSpecs[1].type"]


# Rendering ------------------------------------------------------------------------------


def test_render_order_and_no_launcher_until_every_worker_is_ready() -> None:
    job = make_job()
    not_all_ready = {**workers(), f"{JOB}-worker-1": pod(f"{JOB}-worker-1", "worker", 1)}
    for pods in ({}, workers(ready=False), not_all_ready, workers(1)):
        objects = KIND.render(job, observed(pods))
        assert [o["kind"] for o in objects] == ["Secret", "ConfigMap", "Service", "Pod", "Pod"]
        assert [o["metadata"]["name"] for o in objects] == [
            f"{JOB}-ssh",
            f"{JOB}-hostfile",
            JOB,
            f"{JOB}-worker-0",
            f"{JOB}-worker-1",
        ]
    objects = KIND.render(job, observed(workers()))
    assert [o["metadata"]["name"] for o in objects][5:] == [f"{JOB}-launcher"]


def test_render_keeps_an_existing_launcher() -> None:
    pods = {**workers(ready=False), **launcher()}
    assert KIND.render(make_job(), observed(pods))[-1]["metadata"]["name"] == f"{JOB}-launcher"


def test_every_object_is_labelled_and_namespaced() -> None:
    job = make_job()
    objects = by_name(KIND.render(job, observed(workers())))
    for obj in objects.values():
        assert obj["metadata"]["namespace"] == NS
        assert job.labels().items() <= obj["metadata"]["labels"].items()
    assert objects[f"{JOB}-worker-1"]["metadata"]["labels"] == job.labels("worker", 1)
    assert objects[f"{JOB}-launcher"]["metadata"]["labels"] == job.labels("launcher", 0)


def test_secret_is_new_then_reused() -> None:
    secret = KIND.render(make_job(), observed())[0]
    files = secret_text(secret)
    assert files["authorized_keys"] == files["id_ed25519.pub"]
    assert files["id_ed25519"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    again = KIND.render(make_job(), observed({}, secret))[0]
    assert again is secret


def test_hostfile_lists_one_worker_fqdn_per_line_without_slots() -> None:
    configmap = by_name(KIND.render(make_job(with_worker(replicas=3)), observed()))[
        f"{JOB}-hostfile"
    ]
    assert configmap["data"] == {
        "hostfile": "".join(f"{JOB}-worker-{i}.{JOB}.{NS}.svc.cluster.local\n" for i in range(3))
    }


def test_service_is_headless_over_the_workers() -> None:
    job = make_job()
    service = by_name(KIND.render(job, observed()))[JOB]["spec"]
    assert service == {
        "clusterIP": "None",
        "selector": job.labels("worker"),
        "publishNotReadyAddresses": True,
        "ports": [{"name": "ssh", "port": 22, "targetPort": 22}],
    }


def test_workers_run_sshd_in_place_of_the_template_command() -> None:
    spec = seed_spec()
    spec["worker"]["template"]["metadata"] = {"labels": {"app": "cai"}, "annotations": {"a": "b"}}
    main = spec["worker"]["template"]["spec"]["containers"][0]
    main.update(command=["python"], args=["train.py"])
    spec["worker"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "s"})
    worker = by_name(KIND.render(make_job(spec), observed()))[f"{JOB}-worker-1"]
    assert worker["metadata"]["labels"]["app"] == "cai"
    assert worker["metadata"]["annotations"] == {"a": "b"}
    pod_spec = worker["spec"]
    assert (pod_spec["hostname"], pod_spec["subdomain"]) == (f"{JOB}-worker-1", JOB)
    assert pod_spec["restartPolicy"] == "Never"  # the seed's OnFailure cannot rejoin a run
    main = container_named(worker, "worker")
    assert main["command"][:5] == ["/usr/sbin/sshd", "-D", "-e", "-p", "22"]
    assert "args" not in main
    assert main["readinessProbe"]["tcpSocket"] == {"port": 22}
    assert main["volumeMounts"] == [
        {"mountPath": "/workspace", "name": "code"},
        {"name": "jobcore-ssh", "mountPath": "/root/.ssh", "readOnly": True},
    ]
    assert main["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert main["imagePullPolicy"] == "IfNotPresent"
    assert pod_spec["volumes"] == [
        {"name": "code", "persistentVolumeClaim": {"claimName": "colossalai"}},
        {"name": "jobcore-ssh", "secret": {"secretName": f"{JOB}-ssh", "defaultMode": 0o600}},
    ]
    assert container_named(worker, "sidecar") == {"name": "sidecar", "image": "s"}


def launcher_of(spec: Mapping[str, Any] | None = None) -> Object:
    return by_name(KIND.render(make_job(spec), observed(workers())))[f"{JOB}-launcher"]


def test_launcher_command_argument_by_argument() -> None:
    spec = with_worker(
        procPerWorker=4,
        torchArgs=["--max_restarts=3", "--rdzv_backend=c10d", "--standalone"],
        command=["train.py", "--lr", "0.1", "--master_port", "two words"],
    )
    command = container_named(launcher_of(spec), "launcher")["command"]
    assert command[:4] == [
        "/bin/bash",
        "-c",
        LAUNCHER_SCRIPT,
        "jobcore-colossalai-launcher",
    ]
    assert command[4:] == [
        "run",
        "--hostfile",
        "/etc/colossalai/hostfile",
        "--nproc_per_node",
        "4",
        "--master_addr",
        FQDN0,
        "--master_port",
        "29500",
        "--extra_launch_args",
        "max_restarts=3,rdzv_backend=c10d,standalone",
        "--",
        "train.py",
        "--lr",
        "0.1",
        "--master_port",
        "two\\ words",
    ]
    assert 'exec colossalai "$@"' in command[2]


def test_script_arguments_survive_the_shell_colossalai_run_joins_them_into(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "pwned"
    written = ["my train.py", "two words", f"$(touch {marker})", "x;y", "it's", "", "a\nb", "~"]
    args = colossalai_args(make_job(with_worker(command=written)))
    script = args[args.index("--") + 1 :]
    assert script[0].endswith(".py")  # what colossalai run checks, before any shell
    # colossalai run: " ".join([torchrun..., script, *args]), run by each worker's shell.
    assert worker_shell_reads(script) == written
    assert not marker.exists()


def test_seed_launcher_has_no_extra_launch_args_and_no_ssh_port() -> None:
    command = container_named(launcher_of(), "launcher")["command"]
    assert command[4:] == [
        "run",
        "--hostfile",
        "/etc/colossalai/hostfile",
        "--nproc_per_node",
        "1",
        "--master_addr",
        FQDN0,
        "--master_port",
        "29500",
        "--",
        "train.py",
        "arg1",
    ]


def test_launcher_is_built_from_spec_launcher() -> None:
    spec = seed_spec()
    spec["launcher"]["env"] = env_list(
        {"NCCL_DEBUG": "INFO", "JOBCORE_COLOSSALAI_HOSTFILE": "/elsewhere"}
    )
    pod_ = launcher_of(spec)
    pod_spec = pod_["spec"]
    assert pod_spec["restartPolicy"] == "Never"
    assert [c["name"] for c in pod_spec["containers"]] == ["launcher"]
    main = container_named(pod_, "launcher")
    assert main["image"] == "hpcaitech/colossalai:0.3.0"
    assert main["workingDir"] == "/workspace"
    assert main["resources"] == seed_spec()["launcher"]["resources"]
    assert main["env"] == [  # the user's value of ours wins
        {"name": "JOBCORE_SSH_PORT", "value": "22"},
        *spec["launcher"]["env"],
    ]
    assert main["volumeMounts"] == [
        {"name": "jobcore-ssh", "mountPath": "/root/.ssh", "readOnly": True},
        {"name": "jobcore-hostfile", "mountPath": "/etc/colossalai", "readOnly": True},
    ]
    assert pod_spec["volumes"] == [
        {"name": "jobcore-ssh", "secret": {"secretName": f"{JOB}-ssh", "defaultMode": 0o600}},
        {"name": "jobcore-hostfile", "configMap": {"name": f"{JOB}-hostfile"}},
    ]
    assert "readinessProbe" not in main
    minimal = seed_spec()
    minimal["launcher"] = {"image": "c"}
    main = container_named(launcher_of(minimal), "launcher")
    assert "workingDir" not in main and "resources" not in main
    assert main["env"] == [
        {"name": "JOBCORE_COLOSSALAI_HOSTFILE", "value": "/etc/colossalai/hostfile"},
        {"name": "JOBCORE_SSH_PORT", "value": "22"},
    ]


def test_a_gang_gets_its_launcher_at_once() -> None:
    job = dataclasses.replace(make_job(), gang=True)
    assert f"{JOB}-launcher" in by_name(KIND.render(job, observed()))


def test_debug_mode_runs_sleep_and_starts_the_launcher_at_once() -> None:
    spec = seed_spec()
    spec["runMode"] = {
        "debug": {"enabled": True, "replicaSpecs": [{"type": "worker", "skipInitContainer": True}]}
    }
    spec["worker"]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "i"}]
    objects = by_name(plan(KIND, make_job(spec), observed()))
    assert container_named(objects[f"{JOB}-launcher"], "launcher")["command"] == ["sleep", "inf"]
    worker = objects[f"{JOB}-worker-0"]
    assert container_named(worker, "worker")["command"] == ["sleep", "inf"]
    assert "readinessProbe" not in container_named(worker, "worker")
    assert "initContainers" not in worker["spec"]
    assert worker["metadata"]["labels"][RUN_MODE_LABEL] == "debug"


def test_paused_job_has_no_pods() -> None:
    spec = seed_spec()
    spec["runMode"] = {"pause": {"enabled": True}}
    job = make_job(spec)
    objects = plan(KIND, job, observed({**workers(), **launcher()}))
    assert [o["kind"] for o in objects] == ["Secret", "ConfigMap", "Service"]


# Outcomes -------------------------------------------------------------------------------


def interpret(pods: Mapping[str, Object]) -> Outcome:
    return KIND.interpret(make_job(), observed(pods))


def test_launcher_exit_zero_succeeds() -> None:
    outcome = interpret(
        {**workers(), **launcher(phase="Succeeded", containers=[terminated("launcher", 0)])}
    )
    assert outcome == Outcome("succeeded", "Succeeded", "The job has finished successfully.")


def test_launcher_error_fails_naming_pod_and_code() -> None:
    outcome = interpret(
        {**workers(), **launcher(phase="Failed", containers=[terminated("launcher", 1)])}
    )
    assert (outcome.state, outcome.message) == ("failed", "The job exited with an error code.")
    assert outcome.replica_failure == (
        f"Pod[{JOB}-launcher] exited with error code 1 (container launcher)"
    )


def test_a_failed_worker_fails_the_job_naming_it() -> None:
    pods = {**workers(), **launcher(ready=True)}
    pods[f"{JOB}-worker-1"] = pod(
        f"{JOB}-worker-1",
        "worker",
        1,
        phase="Failed",
        containers=[terminated("worker", 137, "OOMKilled")],
    )
    outcome = interpret(pods)
    assert outcome.state == "failed"
    assert outcome.message == "A worker stopped before the launcher finished."
    assert outcome.replica_failure == (
        f"Pod[{JOB}-worker-1] exited with error code 137 (container worker, OOMKilled)"
    )
    evicted = pod(f"{JOB}-worker-0", "worker", 0, phase="Failed", reason="Evicted")
    outcome = interpret({**workers(), f"{JOB}-worker-0": evicted})
    assert (outcome.state, outcome.replica_failure) == (
        "failed",
        f"Pod[{JOB}-worker-0] failed: Evicted",
    )


def test_running_and_pending_outcomes() -> None:
    assert interpret({**workers(), **launcher(ready=True)}) == Outcome("running")
    assert interpret({}).reason == "WorkersCreating"
    outcome = interpret(workers(ready=False))
    assert (outcome.state, outcome.reason) == ("pending", "WorkersNotReady")
    assert f"{JOB}-worker-0, {JOB}-worker-1" in outcome.message
    assert interpret(workers()).reason == "LauncherCreating"
    assert interpret({**workers(), **launcher(phase="Pending")}).reason == "LauncherPending"


def test_a_stuck_image_is_reported_without_failing() -> None:
    pods = workers(ready=False)
    pods[f"{JOB}-worker-0"]["status"]["containerStatuses"] = [
        {"name": "worker", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "nope"}}}
    ]
    outcome = interpret(pods)
    assert (outcome.state, outcome.replica_failure) == (
        "pending",
        f"Pod[{JOB}-worker-0] container worker is waiting: ImagePullBackOff: nope",
    )


# The launcher script --------------------------------------------------------------------


def test_script_gives_up_on_unresolvable_workers_and_never_starts_colossalai(
    tmp_path: Path,
) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("nowhere-worker-0.cai.ns.svc.invalid\n")
    result = run_command(
        launcher_command(["run", "--", "t.py"]),
        tmp_path,
        programs={"colossalai": "#!/bin/bash\necho STARTED\n"},
        env={
            "JOBCORE_COLOSSALAI_HOSTFILE": str(hostfile),
            "JOBCORE_COLOSSALAI_WAIT_SECONDS": "1",
        },
    )
    assert result.returncode == SSH_WAIT_TIMEOUT_EXIT
    assert "waiting up to 1s for 1 worker(s)" in result.stdout
    assert "STARTED" not in result.stdout


def test_script_execs_colossalai_with_arguments_intact_and_no_hostname(tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("")  # no workers to wait for: straight to colossalai
    marker = tmp_path / "pwned"
    args = [*colossalai_args(make_job()), "two words", f"$(touch {marker})"]
    result = run_command(
        launcher_command(args),
        tmp_path,
        programs={
            "colossalai": '#!/bin/bash\necho "HOSTNAME=$(printenv HOSTNAME || echo unset)"\n'
            'printf "%s\\n" "$@"\n'
        },
        env={"JOBCORE_COLOSSALAI_HOSTFILE": str(hostfile), "HOSTNAME": "cai-launcher"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-len(args) :] == args
    assert not marker.exists()
    # colossalai run exports its environment on every worker: not the launcher's hostname.
    assert "HOSTNAME=unset" in result.stdout.splitlines()
