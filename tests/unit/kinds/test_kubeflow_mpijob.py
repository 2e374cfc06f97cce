"""Kubeflow's MPIJob on plain objects: samples, children, validation, policy and outcomes."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from controllers.kinds import installed_kinds
from controllers.render import load_jobs
from controllers.render import render_job
from jobcore import BATCH_JOBS
from jobcore import Object
from jobcore._jobs.plan import plan
from jobcore._jobs.plan import pod_group
from jobcore.jobs import JOB_KIND_LABEL
from jobcore.jobs import JOB_NAME_LABEL
from jobcore.jobs import REPLICA_TYPE_LABEL
from jobcore.jobs import GangScheduler
from jobcore.jobs import Job
from jobcore.jobs import Observed
from jobcore.jobs import Outcome
from jobcore.jobs import RunPolicy
from jobcore.jobs import SchedulerPlugins
from jobcore.jobs import Volcano
from jobcore.jobs import parse_job
from jobcore.testing import by_name
from jobcore.testing import env_of
from jobcore.testing import error_messages
from jobcore.testing import is_subset
from jobcore.testing import job_manifest
from jobcore.testing import observed_of
from jobcore.testing import pod_of
from jobcore.testing import secret_text
from jobcore.testing import spec_with
from jobcore.testing import waiting
from jobkinds.kubeflow import KubeflowMPIJobKind
from jobkinds.kubeflow.children import launcher_job
from jobkinds.kubeflow.spec import KubeflowMPIJobSpec
from tests.support.builders import JobMaker
from tests.support.jobdocs import SAMPLES_DIR
from tests.support.jobdocs import sample

NS = "team-a"
KIND = KubeflowMPIJobKind()
NAME = "horovod-synthetic"
SSH_ARGS = (
    "-o ConnectionAttempts=10 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
    "-o LogLevel=ERROR"
)


def openmpi_spec() -> dict[str, Any]:
    """The sample in the shape of Kubeflow's guide: 2 workers of 2 slots, mpirun -np 4."""
    spec: dict[str, Any] = sample("kubeflow-mpijob-openmpi")["spec"]
    return spec


make_job = JobMaker(KIND, openmpi_spec, name=NAME, namespace=NS)


def with_replicas(spec: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`spec` with replica specs changed one level deep, e.g. `Worker={"replicas": 3}`."""
    return spec_with(spec, mpiReplicaSpecs=spec_with(spec["mpiReplicaSpecs"], **changes))


def observed(*children: Object) -> Observed:
    return observed_of(*children, resources=KIND.child_resources)


def render(job: Job[KubeflowMPIJobSpec], *children: Object) -> dict[str, Object]:
    return by_name(KIND.render(job, observed(*children)))


def worker(job: Job[KubeflowMPIJobSpec], index: int, **state: Any) -> Object:
    return pod_of(job, f"{job.name}-worker-{index}", "worker", index, **state)


def launcher_pod(job: Job[KubeflowMPIJobSpec], suffix: str = "abcde", **state: Any) -> Object:
    pod = pod_of(job, f"{job.name}-launcher-{suffix}", "launcher", **state)
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": f"{job.name}-launcher"}
    ]
    return pod


def batch_job(job: Job[KubeflowMPIJobSpec], **conditions: Mapping[str, str]) -> Object:
    """The launcher Job as Kubernetes reports it, with `conditions` by type."""
    rendered = launcher_job(job)
    listed = [{"type": kind, "status": "True", **fields} for kind, fields in conditions.items()]
    return {**rendered, "status": {"conditions": listed}}


# The API ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["kubeflow-mpijob-openmpi", "kubeflow-mpijob-pi-nonroot"])
def test_samples_are_valid_and_round_trip(name: str) -> None:
    doc = sample(name)
    job, errors = parse_job(KIND, {**doc, "metadata": {**doc["metadata"], "namespace": NS}})
    assert errors == []
    assert job is not None
    assert is_subset(doc["spec"], job.spec.to_api())


def test_defaults_are_kubeflows() -> None:
    spec = KubeflowMPIJobSpec.model_validate({"mpiReplicaSpecs": {}})
    assert spec.slots_per_worker == 1
    assert spec.ssh_auth_mount_path == "/root/.ssh"
    assert spec.launcher_creation_policy == "AtStartup"
    assert spec.mpi_implementation == "OpenMPI"
    assert not spec.run_launcher_as_worker and not spec.run_policy.suspend


def test_the_kind_is_installed_under_its_own_name() -> None:
    [installed] = installed_kinds(["kubeflow-mpijob"])
    assert isinstance(installed.kind, KubeflowMPIJobKind)
    assert installed.kind.resource.api_version == "kubeflow.org/v2beta1"
    assert KIND.hooks.controller_name == "mpijobs.kubeflow.org"


# Children --------------------------------------------------------------------------------------


def test_children_have_kubeflows_names_and_labels() -> None:
    children = render(make_job())
    assert list(children) == [
        f"{NAME}-ssh",
        f"{NAME}-config",
        NAME,
        f"{NAME}-worker-0",
        f"{NAME}-worker-1",
        f"{NAME}-launcher",
    ]
    for child in children.values():
        labels = child["metadata"]["labels"]
        assert labels[JOB_NAME_LABEL] == NAME and labels[JOB_KIND_LABEL] == "MPIJob"
    assert children[f"{NAME}-worker-1"]["metadata"]["labels"] == {
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": NAME,
        "training.kubeflow.org/job-role": "worker",
        "training.kubeflow.org/replica-index": "1",
        JOB_NAME_LABEL: NAME,
        JOB_KIND_LABEL: "MPIJob",
        REPLICA_TYPE_LABEL: "worker",
        "jobcore.dev/replica-index": "1",
    }
    launcher = children[f"{NAME}-launcher"]
    assert (launcher["apiVersion"], launcher["kind"]) == ("batch/v1", "Job")
    assert launcher["metadata"]["labels"][REPLICA_TYPE_LABEL] == "launcher"
    template_labels = launcher["spec"]["template"]["metadata"]["labels"]
    assert template_labels["training.kubeflow.org/job-role"] == "launcher"
    assert template_labels[REPLICA_TYPE_LABEL] == "launcher"
    assert "training.kubeflow.org/replica-index" not in template_labels


def test_service_is_headless_over_launcher_and_workers() -> None:
    service = render(make_job())[NAME]["spec"]
    assert service == {
        "clusterIP": "None",
        "selector": {
            "training.kubeflow.org/operator-name": "mpi-operator",
            "training.kubeflow.org/job-name": NAME,
        },
        "publishNotReadyAddresses": False,
    }


def test_workers_run_sshd_unless_they_name_a_command() -> None:
    pod = render(make_job())[f"{NAME}-worker-0"]
    spec = pod["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["restartPolicy"]) == (
        f"{NAME}-worker-0",
        NAME,
        "Never",
    )
    assert "dnsConfig" not in spec  # the launcher is not looked up by name (Hydra: its address)
    container = spec["containers"][0]
    assert container["command"] == ["/usr/sbin/sshd", "-De"]
    assert env_of(container) == {"K_MPI_JOB_ROLE": "worker"}
    assert container["volumeMounts"] == [{"name": "ssh-auth", "mountPath": "/root/.ssh"}]
    own = render(make_job(sample("kubeflow-mpijob-pi-nonroot")["spec"], name="pi"))
    sshd = own["pi-worker-0"]["spec"]["containers"][0]
    assert (sshd["command"], sshd["args"]) == (
        ["/usr/sbin/sshd"],
        ["-De", "-f", "/home/mpiuser/.sshd_config"],
    )


def test_ssh_keys_are_owner_only_under_root_only() -> None:
    items = [
        {"key": "ssh-privatekey", "path": "id_rsa"},
        {"key": "ssh-publickey", "path": "id_rsa.pub"},
        {"key": "ssh-publickey", "path": "authorized_keys"},
    ]
    volume = render(make_job())[f"{NAME}-worker-0"]["spec"]["volumes"][0]
    assert volume == {
        "name": "ssh-auth",
        "secret": {"secretName": f"{NAME}-ssh", "items": items, "defaultMode": 0o600},
    }
    job = make_job(sample("kubeflow-mpijob-pi-nonroot")["spec"], name="pi")
    pod = render(job)["pi-worker-0"]["spec"]
    assert "defaultMode" not in pod["volumes"][0]["secret"]
    assert pod["containers"][0]["volumeMounts"][0]["mountPath"] == "/home/mpiuser/.ssh"


def test_launcher_job_carries_the_run_policy_and_the_launcher_template() -> None:
    spec = spec_with(openmpi_spec(), runPolicy={"backoffLimit": 2, "activeDeadlineSeconds": 600})
    job_spec = render(make_job(spec))[f"{NAME}-launcher"]["spec"]
    assert (job_spec["backoffLimit"], job_spec["activeDeadlineSeconds"]) == (2, 600)
    assert job_spec["podReplacementPolicy"] == "Failed"
    pod = job_spec["template"]["spec"]
    assert (pod["hostname"], pod["subdomain"], pod["restartPolicy"]) == (
        f"{NAME}-launcher",
        NAME,
        "OnFailure",
    )
    container = pod["containers"][0]
    assert container["command"][:4] == ["mpirun", "--allow-run-as-root", "-np", "4"]
    assert container["volumeMounts"] == [
        {"name": "ssh-auth", "mountPath": "/root/.ssh"},
        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
    ]
    assert pod["volumes"][1] == {
        "name": "mpi-job-config",
        "configMap": {
            "name": f"{NAME}-config",
            "items": [
                {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
            ],
        },
    }
    unset = render(make_job())[f"{NAME}-launcher"]["spec"]
    assert "backoffLimit" not in unset and "activeDeadlineSeconds" not in unset


OPEN_MPI_ENV = {
    "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
    "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
    "OMPI_MCA_orte_set_default_slots": "2",
    "OMPI_MCA_plm_rsh_args": SSH_ARGS,
    "PRTE_MCA_prte_default_hostfile": "/etc/mpi/hostfile",
    "PRTE_MCA_prte_keep_fqdn_hostnames": "true",
    "PRTE_MCA_prte_set_default_slots": "2",
    "PRTE_MCA_plm_ssh_args": SSH_ARGS,
}
INTEL_ENV = {
    "I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile",
    "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": SSH_ARGS,
    "I_MPI_PERHOST": "2",
    "HYDRA_IFACE": "eth0",
    "I_MPI_HYDRA_IFACE": "eth0",
}
MPICH_ENV = {
    "HYDRA_HOST_FILE": "/etc/mpi/hostfile",
    "HYDRA_LAUNCH_EXTRA_ARGS": SSH_ARGS,
    "HYDRA_LAUNCHER_EXTRA_ARGS": SSH_ARGS,
    "HYDRA_IFACE": "eth0",
    "I_MPI_HYDRA_IFACE": "eth0",
}
"""Hydra's proxies call the launcher back at its pod's address (HYDRA_IFACE for MPICH,
I_MPI_HYDRA_IFACE for Intel MPI): no name for another tenant's Service to answer."""
HIDDEN_GPUS = {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}


@pytest.mark.parametrize(
    ("implementation", "expected", "line"),
    [
        ("OpenMPI", OPEN_MPI_ENV, "{host} slots=2"),
        ("Intel", INTEL_ENV, "{host}:2"),
        ("MPICH", MPICH_ENV, "{host}:2"),
    ],
)
def test_each_implementation_gets_its_environment_and_hostfile(
    implementation: str, expected: dict[str, str], line: str
) -> None:
    children = render(make_job(spec_with(openmpi_spec(), mpiImplementation=implementation)))
    container = children[f"{NAME}-launcher"]["spec"]["template"]["spec"]["containers"][0]
    assert env_of(container) == {"K_MPI_JOB_ROLE": "launcher", **expected, **HIDDEN_GPUS}
    hosts = [f"{NAME}-worker-{i}.{NAME}.{NS}.svc.cluster.local" for i in range(2)]
    expected_hostfile = "".join(line.format(host=host) + "\n" for host in hosts)
    assert children[f"{NAME}-config"]["data"]["hostfile"] == expected_hostfile


def test_the_launcher_as_a_worker_is_listed_first_and_published_early() -> None:
    job = make_job(spec_with(openmpi_spec(), runLauncherAsWorker=True))
    children = render(job, worker(job, 1), worker(job, 0, phase="Pending"))
    launcher_host = f"{NAME}-launcher.{NAME}.{NS}.svc.cluster.local"
    data = children[f"{NAME}-config"]["data"]
    assert data["hostfile"].splitlines()[0] == f"{launcher_host} slots=2"
    assert len(data["hostfile"].splitlines()) == 3
    # Only running workers are discovered, after the launcher.
    assert data["discover_hosts.sh"] == (
        f"#!/bin/sh\necho {launcher_host}\necho {NAME}-worker-1.{NAME}.{NS}.svc.cluster.local\n"
    )
    assert children[NAME]["spec"]["publishNotReadyAddresses"] is True
    index = "training.kubeflow.org/replica-index"
    assert children[f"{NAME}-worker-0"]["metadata"]["labels"][index] == "1"
    launcher = children[f"{NAME}-launcher"]["spec"]["template"]
    assert launcher["metadata"]["labels"][index] == "0"
    assert not HIDDEN_GPUS.keys() & env_of(launcher["spec"]["containers"][0]).keys()


def test_wait_for_workers_ready_holds_the_launcher_until_every_worker_is_ready() -> None:
    job = make_job(spec_with(openmpi_spec(), launcherCreationPolicy="WaitForWorkersReady"))
    launcher = f"{NAME}-launcher"
    assert launcher not in render(job)
    assert launcher not in render(job, worker(job, 0, ready=True), worker(job, 1))
    assert launcher in render(job, worker(job, 0, ready=True), worker(job, 1, ready=True))
    assert launcher in render(job, batch_job(job))  # never taken back once created


def test_under_a_gang_scheduler_the_launcher_joins_the_gang_at_once() -> None:
    job = make_job(spec_with(openmpi_spec(), launcherCreationPolicy="WaitForWorkersReady"))
    gang = dataclasses.replace(job, gang=True)
    assert f"{NAME}-launcher" in render(gang)
    assert KIND.replicas(gang) == KIND.replicas(job) == {"launcher": 1, "worker": 2}
    children = by_name(plan(KIND, gang, observed(), scheduler=Volcano()))
    template = children[f"{NAME}-launcher"]["spec"]["template"]
    assert template["spec"]["schedulerName"] == "volcano"
    assert template["metadata"]["annotations"][Volcano.GROUP_ANNOTATION] == NAME


@pytest.mark.parametrize("scheduler", [Volcano(queue="default"), SchedulerPlugins()])
def test_scheduling_policy_sets_the_jobs_pod_group(scheduler: GangScheduler) -> None:
    policy = {
        "minAvailable": 2,
        "queue": "team-a",
        "minResources": {"cpu": "3"},
        "priorityClass": "high",
        "scheduleTimeoutSeconds": 180,
    }
    spec = spec_with(openmpi_spec(), runPolicy={"schedulingPolicy": policy})
    job = dataclasses.replace(make_job(spec), gang=True)
    group = pod_group(KIND, job, scheduler, plan(KIND, job, observed(), scheduler=scheduler))
    assert group["spec"]["minMember"] == 2
    assert group["spec"]["minResources"] == {"cpu": "3"}
    if isinstance(scheduler, Volcano):
        assert (group["spec"]["queue"], group["spec"]["priorityClassName"]) == ("team-a", "high")
    else:
        assert group["spec"]["scheduleTimeoutSeconds"] == 180
    unset = dataclasses.replace(make_job(), gang=True)
    default = pod_group(KIND, unset, scheduler, plan(KIND, unset, observed(), scheduler=scheduler))
    assert default["spec"]["minMember"] == 3  # the launcher and both workers


def test_a_launcher_only_job_has_no_workers_and_launches_at_once() -> None:
    spec = spec_with(openmpi_spec(), launcherCreationPolicy="WaitForWorkersReady")
    spec["mpiReplicaSpecs"] = {"Launcher": spec["mpiReplicaSpecs"]["Launcher"]}
    job = make_job(spec)
    children = render(job)
    assert sorted(children) == sorted([f"{NAME}-ssh", f"{NAME}-config", NAME, f"{NAME}-launcher"])
    assert children[f"{NAME}-config"]["data"]["hostfile"] == ""
    assert KIND.replicas(job) == {"launcher": 1, "worker": 0}
    assert KIND.validate(job) == []


def test_a_new_secret_holds_a_fresh_keypair_and_an_existing_one_is_kept() -> None:
    secret = render(make_job())[f"{NAME}-ssh"]
    assert secret["type"] == "kubernetes.io/ssh-auth"
    files = secret_text(secret)
    assert sorted(files) == ["agent-key", "ssh-privatekey", "ssh-publickey"]
    key = serialization.load_ssh_private_key(files["ssh-privatekey"].encode(), password=None)
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert files["ssh-publickey"].startswith(public.decode() + " ")
    existing = {**secret, "data": {"ssh-privatekey": base64.b64encode(b"old").decode()}}
    assert render(make_job(), existing)[f"{NAME}-ssh"] is existing


def test_worker_restart_policy_follows_the_replica_spec() -> None:
    spec = with_replicas(openmpi_spec(), Worker={"replicas": 1, "restartPolicy": "OnFailure"})
    spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["hostNetwork"] = True
    pod = render(make_job(spec))[f"{NAME}-worker-0"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"]) == ("OnFailure", "ClusterFirstWithHostNet")


def test_exit_code_runs_as_never_and_the_template_restart_policy_is_overridden() -> None:
    spec = with_replicas(openmpi_spec(), Worker={"restartPolicy": "ExitCode"})
    spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["restartPolicy"] = "Never"
    children = render(make_job(spec))
    assert children[f"{NAME}-worker-0"]["spec"]["restartPolicy"] == "Never"
    launcher = children[f"{NAME}-launcher"]["spec"]["template"]["spec"]
    assert launcher["restartPolicy"] == "OnFailure"


# Validation ------------------------------------------------------------------------------------


def errors_of(spec: Mapping[str, Any], name: str = NAME) -> dict[str, str]:
    return error_messages(KIND.validate(make_job(spec, name=name)))


def test_samples_pass_validation() -> None:
    assert errors_of(openmpi_spec()) == {}


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"Launcher": {"replicas": 2}}, "Launcher.replicas", "must be 1"),
        ({"Worker": {"replicas": 0}}, "Worker.replicas", "must be between 1 and 1000"),
        ({"Worker": {"replicas": None}}, "Worker.replicas", "must be between 1 and 1000"),
        ({"Worker": {"replicas": 1001}}, "Worker.replicas", "must be between 1 and 1000"),
        (
            {"Worker": {"restartPolicy": "Always"}},
            "Worker.restartPolicy",
            'Unsupported value: "Always": supported values: "Never", "OnFailure"',
        ),
        (
            {"Launcher": {"restartPolicy": "ExitCode"}},
            "Launcher.restartPolicy",
            'Unsupported value: "ExitCode": supported values: "Never", "OnFailure"',
        ),
    ],
)
def test_replica_specs_are_checked_as_kubeflow_checks_them(
    change: dict[str, Any], path: str, message: str
) -> None:
    errors = errors_of(with_replicas(openmpi_spec(), **change))
    assert errors == {f"spec.mpiReplicaSpecs.{path}": message}


def test_a_job_needs_a_launcher() -> None:
    spec = {**openmpi_spec(), "mpiReplicaSpecs": {}}
    assert errors_of(spec) == {"spec.mpiReplicaSpecs.Launcher": "must have Launcher replica spec"}


def test_names_mount_paths_and_controllers_are_checked() -> None:
    assert "too long" in errors_of(openmpi_spec(), name="x" * 55)["metadata.name"]
    assert "DNS-1035" in errors_of(openmpi_spec(), name="1job")["metadata.name"]
    unsafe = errors_of(spec_with(openmpi_spec(), sshAuthMountPath="/home/$USER/.ssh"))
    assert "absolute path" in unsafe["spec.sshAuthMountPath"]
    other = errors_of(spec_with(openmpi_spec(), runPolicy={"managedBy": "example.com/other"}))
    assert other["spec.runPolicy.managedBy"].startswith("Unsupported value")
    for allowed in ("kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"):
        assert errors_of(spec_with(openmpi_spec(), runPolicy={"managedBy": allowed})) == {}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"slotsPerWorker": -1}, "spec.slotsPerWorker"),
        ({"mpiImplementation": "IntelMPI"}, "spec.mpiImplementation"),
        ({"launcherCreationPolicy": "Later"}, "spec.launcherCreationPolicy"),
        ({"runPolicy": {"cleanPodPolicy": "Some"}}, "spec.runPolicy.cleanPodPolicy"),
        ({"runPolicy": {"backoffLimit": -1}}, "spec.runPolicy.backoffLimit"),
        ({"runPolicy": {"activeDeadlineSeconds": 0}}, "spec.runPolicy.activeDeadlineSeconds"),
        ({"runPolicy": {"ttlSecondsAfterFinished": -1}}, "spec.runPolicy.ttlSecondsAfterFinished"),
        ({"mpiReplicaSpecs": {"Chief": {}}}, "spec.mpiReplicaSpecs.Chief"),
    ],
)
def test_the_schema_refuses_what_kubeflow_refuses(change: dict[str, Any], path: str) -> None:
    obj = job_manifest(KIND, {**openmpi_spec(), **change}, name=NAME, namespace=NS)
    job, errors = parse_job(KIND, obj)
    assert job is None
    assert path in error_messages(errors)


def test_a_template_without_containers_is_refused() -> None:
    spec = with_replicas(openmpi_spec(), Worker={"template": {"spec": {"containers": []}}})
    _, errors = parse_job(KIND, job_manifest(KIND, spec, name=NAME, namespace=NS))
    assert "spec.mpiReplicaSpecs.Worker.template.spec.containers" in error_messages(errors)


# Policy ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clean_pod_policy", "clean_up"),
    [(None, None), ("None", None), ("Running", "Unfinished"), ("All", "All")],
)
def test_run_policy_is_translated_for_jobcore(
    clean_pod_policy: str | None, clean_up: str | None
) -> None:
    given = {"cleanPodPolicy": clean_pod_policy, "backoffLimit": 3}
    given |= {"activeDeadlineSeconds": 900, "ttlSecondsAfterFinished": 60}
    policy = make_job(spec_with(openmpi_spec(), runPolicy=given)).policy
    assert policy.run_policy == RunPolicy(
        clean_up_policy=clean_up,  # type: ignore[arg-type]
        backoff_limit=0,
        active_deadline_seconds=900,
        ttl_seconds_after_finished=60,
    )
    assert policy.run_mode is None and policy.scheduler is None


def test_a_suspended_job_is_paused_and_plans_no_pods_nor_launcher() -> None:
    job = make_job(spec_with(openmpi_spec(), runPolicy={"suspend": True}))
    assert job.paused
    kinds = sorted(child["kind"] for child in plan(KIND, job, observed()))
    assert kinds == ["ConfigMap", "Secret", "Service"]


def test_jobs_of_another_controller_are_left_alone() -> None:
    hook = KIND.hooks.manages
    assert hook is not None

    def manages(run_policy: Any) -> bool:
        return hook({"spec": {"runPolicy": run_policy}})

    assert manages({}) and manages(None) and manages({"managedBy": "kubeflow.org/mpi-operator"})
    assert not manages({"managedBy": "kueue.x-k8s.io/multikueue"})
    assert not manages({"managedBy": "example.com/other"})
    assert hook({"spec": "not a spec"})  # its validation says what is wrong


# Outcomes ----------------------------------------------------------------------------------------


def interpret(job: Job[KubeflowMPIJobSpec], *children: Object) -> Outcome:
    return KIND.interpret(job, observed(*children))


def test_the_launcher_jobs_completion_decides_success() -> None:
    job = make_job()
    outcome = interpret(job, batch_job(job, Complete={}), worker(job, 0), worker(job, 1))
    assert outcome == Outcome(
        "succeeded", "MPIJobSucceeded", f"MPIJob {NS}/{NAME} successfully completed."
    )


def test_the_launcher_jobs_failure_fails_the_job_with_its_reason() -> None:
    job = make_job()
    failed = {"reason": "DeadlineExceeded", "message": "Job was active longer than specified"}
    assert interpret(job, batch_job(job, Failed=failed)) == Outcome(
        "failed", "DeadlineExceeded", "Job was active longer than specified"
    )
    bare = interpret(job, batch_job(job, Failed={}))
    assert (bare.reason, bare.message) == ("MPIJobFailed", f"MPIJob {NS}/{NAME} has failed")


def test_after_the_last_retry_the_last_failed_launcher_pod_says_why() -> None:
    job = make_job()
    backoff = {"reason": "BackoffLimitExceeded", "message": "Job has reached the backoff limit"}
    first = launcher_pod(job, "aaaaa", phase="Failed", reason="OOMKilled", message="first")
    last = launcher_pod(job, "bbbbb", phase="Failed", reason="Evicted", message="node pressure")
    first["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    last["metadata"]["creationTimestamp"] = "2026-01-01T00:01:00Z"
    outcome = interpret(job, batch_job(job, Failed=backoff), first, last)
    assert (outcome.state, outcome.reason) == ("failed", "BackoffLimitExceeded/Evicted")
    assert outcome.message == "Job has reached the backoff limit: node pressure"
    plain = interpret(job, batch_job(job, Failed=backoff), launcher_pod(job, phase="Failed"))
    assert plain.reason == "BackoffLimitExceeded"


def test_evicted_workers_fail_the_job() -> None:
    job = make_job()
    evicted = worker(job, 1, phase="Failed", reason="Evicted")
    outcome = interpret(job, batch_job(job), launcher_pod(job), worker(job, 0), evicted)
    assert outcome == Outcome("failed", "MPIJobEvicted", "1/2 workers are evicted")


def test_the_job_runs_once_a_launcher_pod_and_every_worker_run() -> None:
    job = make_job()
    workers = [worker(job, 0), worker(job, 1)]
    running = interpret(job, batch_job(job), launcher_pod(job), *workers)
    assert (running.state, running.reason) == ("running", "MPIJobRunning")
    pending = interpret(job, batch_job(job), launcher_pod(job, phase="Pending"), *workers)
    assert (pending.state, pending.reason) == ("pending", "MPIJobPending")
    # The launcher's pod ended well before its Job completes: still running.
    ending = interpret(job, batch_job(job), launcher_pod(job, phase="Succeeded"), *workers)
    assert ending.state == "running"
    one = interpret(job, batch_job(job), launcher_pod(job), workers[0])
    assert one.state == "pending"
    assert one.message.startswith("1 of 2 worker(s) running")


def test_a_pending_job_says_what_it_waits_for() -> None:
    job = make_job(spec_with(openmpi_spec(), launcherCreationPolicy="WaitForWorkersReady"))
    stuck = worker(job, 1, phase="Pending", containers=[waiting("worker", "ImagePullBackOff")])
    outcome = interpret(job, worker(job, 0, ready=True), stuck)
    assert (outcome.state, outcome.reason) == ("pending", "WaitingForWorkers")
    assert outcome.message.startswith("1 of 2 worker(s) Ready; the launcher starts once all are.")
    assert "ImagePullBackOff" in outcome.message


def test_launcher_pods_count_as_the_launcher_task() -> None:
    job = make_job()
    launcher = render(job)[f"{NAME}-launcher"]
    labels = launcher["spec"]["template"]["metadata"]["labels"]
    assert labels[REPLICA_TYPE_LABEL] == "launcher" and labels[JOB_NAME_LABEL] == NAME
    assert BATCH_JOBS in KIND.child_resources
    assert KIND.kept_after_cleanup == ("launcher",)


# Offline tools -----------------------------------------------------------------------------------


def test_validate_and_render_pick_the_kind_by_api_version_and_kind(tmp_path: Path) -> None:
    kinds = [installed.kind for installed in installed_kinds()]
    both = [
        str(SAMPLES_DIR / "kubeflow-mpijob-pi-nonroot.yaml"),
        str(SAMPLES_DIR / "mpijob-env.yaml"),
    ]
    jobs, problems = load_jobs(both, kinds)
    assert problems == []
    assert [job.kind.resource.group for job in jobs] == ["kubeflow.org", "batch.tensorstack.dev"]
    first = [child["kind"] for child in render_job(jobs[0].kind, jobs[0].job)]
    assert first == ["Secret", "ConfigMap", "Service", "Pod", "Pod"]  # workers not Ready yet
    ready = render_job(jobs[0].kind, jobs[0].job, workers_ready=True)
    assert ready[-1]["kind"] == "Job" and ready[-1]["metadata"]["name"] == "kubeflow-pi-launcher"
    t9k_shape = sample("mpijob-env") | {"apiVersion": "kubeflow.org/v2beta1"}
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(yaml.safe_dump(t9k_shape))
    _, problems = load_jobs([str(mixed)], kinds)
    assert any("spec.worker: Extra inputs are not permitted" in str(p) for p in problems)


def test_min_resources_unset_are_what_the_first_min_available_pods_request() -> None:
    spec = with_replicas(openmpi_spec(), Worker={"replicas": 3})
    replicas = spec["mpiReplicaSpecs"]
    launcher = replicas["Launcher"]["template"]["spec"]["containers"][0]
    launcher["resources"] = {"requests": {"cpu": "500m", "memory": "1Gi"}}
    worker = replicas["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {"requests": {"memory": "512Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}}

    def min_resources(**scheduling: Any) -> Any:
        policy = {"schedulingPolicy": scheduling} if scheduling else {}
        job = dataclasses.replace(make_job(spec_with(spec, runPolicy=policy)), gang=True)
        group = pod_group(KIND, job, Volcano(), plan(KIND, job, observed(), scheduler=Volcano()))
        return group["spec"].get("minResources")

    # The launcher and every worker: 500m + 3 x 2 (limits where nothing is requested).
    assert min_resources() == {"cpu": "6500m", "memory": "2560Mi"}
    # minAvailable 2: the launcher and one worker, as Kubeflow counts them.
    assert min_resources(minAvailable=2) == {"cpu": "2500m", "memory": "1536Mi"}
    assert min_resources(minAvailable=0) is None
    assert min_resources(minResources={"cpu": "1"}) == {"cpu": "1"}
