"""Kubeflow's MPIJob (kubeflow.org/v2beta1) end to end: the kind's controller, Kubernetes' Job
controller running its launcher Job, a real API server and the simulated node.

Each test checks what a Kubeflow user sees (children, status, Events) against the behaviour of
Kubeflow's MPI Operator v2, apart from what jobcore's kind decides otherwise on purpose (the
launcher Job is deleted on suspension, for one). Suspension as Kueue drives it, the active
deadline and the TTL are in test_kubeflow_suspend.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobcore import BATCH_JOBS
from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import SECRETS
from jobcore import SERVICES
from jobcore import Client
from jobcore import Controller
from jobcore import Object
from jobcore import Request
from jobcore.jobs import crd_for
from jobcore.testing import SimulatedNode
from jobcore.testing import controller_uids
from jobcore.testing import env_of
from jobcore.testing import eventually
from jobcore.testing import job_status
from jobcore.testing import live_pods
from jobcore.testing import resync
from jobcore.testing import wait_for_deletion
from jobcore.testing import wait_until_settled
from tests.support.commands import run_cli
from tests.support.kubeflowjobs import JOB_NAME
from tests.support.kubeflowjobs import JOB_ROLE
from tests.support.kubeflowjobs import KIND
from tests.support.kubeflowjobs import LAUNCHER
from tests.support.kubeflowjobs import MPIJOBS
from tests.support.kubeflowjobs import MULTIKUEUE
from tests.support.kubeflowjobs import OPERATOR_NAME
from tests.support.kubeflowjobs import PI
from tests.support.kubeflowjobs import REPLICA_INDEX
from tests.support.kubeflowjobs import SSH_AUTH
from tests.support.kubeflowjobs import children_gone
from tests.support.kubeflowjobs import condition_of
from tests.support.kubeflowjobs import events_about
from tests.support.kubeflowjobs import exists
from tests.support.kubeflowjobs import host
from tests.support.kubeflowjobs import is_true
from tests.support.kubeflowjobs import launcher_job
from tests.support.kubeflowjobs import launcher_pods
from tests.support.kubeflowjobs import mounts_of
from tests.support.kubeflowjobs import mpijob
from tests.support.kubeflowjobs import phases
from tests.support.kubeflowjobs import running_launcher
from tests.support.kubeflowjobs import started
from tests.support.kubeflowjobs import wait_for_condition
from tests.support.kubeflowjobs import wait_for_kubeflow_events
from tests.support.kubeflowjobs import wait_for_replicas
from tests.support.kubeflowjobs import worker_names

pytestmark = pytest.mark.integration


# The kind and its CRD ------------------------------------------------------------------------


def test_the_kind_serves_kubeflows_mpijobs() -> None:
    assert KIND.resource == MPIJOBS
    crd = crd_for(KIND)
    assert crd["metadata"]["name"] == "mpijobs.kubeflow.org"
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v2beta1"]
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}


# A job's life ---------------------------------------------------------------------------------


async def lists_hosts(
    client: Client, namespace: str, name: str, hosts: list[str], *, slots: int
) -> Object:
    """The job's ConfigMap, whose hostfile lists `hosts` with `slots` each, and whose
    discover_hosts.sh echoes them once they run."""
    config = await client.get(CONFIGMAPS, f"{name}-config", namespace)
    assert config["data"]["hostfile"] == "".join(f"{h} slots={slots}\n" for h in hosts)
    discovery = "#!/bin/sh\n" + "".join(f"echo {h}\n" for h in hosts)

    async def discovers_them() -> bool:
        data = (await client.get(CONFIGMAPS, f"{name}-config", namespace))["data"]
        return bool(data.get("discover_hosts.sh") == discovery)

    await eventually(discovers_them)
    return config


async def test_a_job_runs_with_kubeflows_children_status_and_events(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "pi"))
    status = await wait_for_condition(client, namespace, "pi", "Created")
    created = condition_of(status, "Created")
    assert (created["reason"], created["message"]) == (
        "MPIJobCreated",
        f"MPIJob {namespace}/pi is created.",
    )
    launcher = await running_launcher(client, namespace, "pi")
    status = await wait_for_condition(client, namespace, "pi", "Running")
    running = condition_of(status, "Running")
    assert (running["reason"], running["message"]) == (
        "MPIJobRunning",
        f"MPIJob {namespace}/pi is running.",
    )
    assert status.get("startTime")
    await wait_for_replicas(
        client, namespace, "pi", {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    )

    owner = (await client.get(MPIJOBS, "pi", namespace))["metadata"]["uid"]
    workers = worker_names("pi")
    children = [
        (SERVICES, "pi"),
        (CONFIGMAPS, "pi-config"),
        (SECRETS, "pi-ssh"),
        (BATCH_JOBS, "pi-launcher"),
        *((PODS, w) for w in workers),
    ]
    assert await controller_uids(client, namespace, children) == [owner] * len(children)

    service = await client.get(SERVICES, "pi", namespace)
    assert service["metadata"]["labels"]["app"] == "pi"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {OPERATOR_NAME: "mpi-operator", JOB_NAME: "pi"}
    assert not service["spec"].get("publishNotReadyAddresses")

    hosts = [host(w, "pi", namespace) for w in workers]
    config = await lists_hosts(client, namespace, "pi", hosts, slots=1)
    assert config["metadata"]["labels"]["app"] == "pi"

    secret = await client.get(SECRETS, "pi-ssh", namespace)
    assert secret["metadata"]["labels"]["app"] == "pi"
    assert secret["type"] == SSH_AUTH
    assert set(secret["data"]) == {"ssh-privatekey", "ssh-publickey", "agent-key"}

    pods = await live_pods(client, namespace)
    for index, name in enumerate(workers):
        pod = pods[name]
        labels = pod["metadata"]["labels"]
        assert (labels[OPERATOR_NAME], labels[JOB_NAME], labels[JOB_ROLE]) == (
            "mpi-operator",
            "pi",
            "worker",
        )
        assert labels[REPLICA_INDEX] == str(index)
        spec = pod["spec"]
        assert (spec["hostname"], spec["subdomain"], spec["restartPolicy"]) == (
            name,
            "pi",
            "Never",
        )
        main = spec["containers"][0]
        assert main["command"] == ["/usr/sbin/sshd", "-De"]
        assert env_of(main)["K_MPI_JOB_ROLE"] == "worker"
        assert "/root/.ssh" in mounts_of(main)

    job = await client.get(BATCH_JOBS, "pi-launcher", namespace)
    assert job["metadata"]["labels"]["app"] == "pi"
    template = job["spec"]["template"]
    assert template["metadata"]["labels"][JOB_ROLE] == "launcher"
    assert REPLICA_INDEX not in template["metadata"]["labels"]
    spec = template["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["restartPolicy"]) == (
        "pi-launcher",
        "pi",
        "OnFailure",
    )
    main = spec["containers"][0]
    assert (main["command"], main["args"]) == (["mpirun"], ["-n", "2", "/home/mpiuser/pi"])
    env = env_of(main)
    assert env["K_MPI_JOB_ROLE"] == "launcher"
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert env["OMPI_MCA_orte_set_default_slots"] == "1"
    assert {"/etc/mpi", "/root/.ssh"} <= mounts_of(main)
    assert launcher["metadata"]["name"].startswith("pi-launcher-")
    assert launcher["spec"]["hostname"] == "pi-launcher"

    await simulated_node.succeed(namespace, launcher["metadata"]["name"])
    status = await wait_for_condition(client, namespace, "pi", "Succeeded")
    succeeded = condition_of(status, "Succeeded")
    assert (succeeded["reason"], succeeded["message"]) == (
        "MPIJobSucceeded",
        f"MPIJob {namespace}/pi successfully completed.",
    )
    running = condition_of(status, "Running")
    assert (running["status"], running["reason"]) == ("False", "MPIJobRunning")
    assert not is_true(status, "Failed")
    assert status.get("completionTime")

    # cleanPodPolicy Running: the workers go, the launcher Job and its pod stay.
    async def workers_deleted() -> bool:
        return await phases(client, namespace) == {launcher["metadata"]["name"]: "Succeeded"}

    await eventually(workers_deleted)
    await wait_for_replicas(client, namespace, "pi", {"Launcher": {"succeeded": 1}, "Worker": {}})
    events = await wait_for_kubeflow_events(
        client, namespace, "pi", "MPIJobCreated", "MPIJobRunning", "MPIJobSucceeded"
    )
    assert events["MPIJobCreated"] == ("Normal", f"MPIJob {namespace}/pi is created.")
    assert events["MPIJobRunning"] == ("Normal", f"MPIJob {namespace}/pi is running")
    assert events["MPIJobSucceeded"] == (
        "Normal",
        f"MPIJob {namespace}/pi successfully completed.",
    )


# Failures -------------------------------------------------------------------------------------


async def test_a_launcher_failing_past_its_backoff_limit_fails_the_job_with_the_jobs_reason(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    simulated_node.when(f"{JOB_NAME}=bad,{LAUNCHER}", exit_code=1, after=0.2)
    await client.create(MPIJOBS, mpijob(namespace, "bad", run_policy={"backoffLimit": 0}))
    status = await wait_for_condition(client, namespace, "bad", "Failed")
    failed = condition_of(status, "Failed")
    # The launcher Job's reason and message, as Kubernetes' Job controller wrote them (Kubeflow
    # appends the last failed launcher pod's reason, if any).
    assert failed["reason"].startswith("BackoffLimitExceeded"), failed
    assert failed["message"].startswith("Job has reached the specified backoff limit"), failed
    assert not is_true(status, "Succeeded")
    assert status.get("completionTime")
    # Kubernetes stopped the launcher; cleanPodPolicy Running deleted the running workers.
    await eventually(lambda: _no_pods(client, namespace))
    await wait_for_replicas(client, namespace, "bad", {"Launcher": {"failed": 1}, "Worker": {}})
    events = await wait_for_kubeflow_events(client, namespace, "bad", failed["reason"])
    assert events[failed["reason"]] == ("Warning", failed["message"])


async def test_a_pod_left_running_by_a_failed_launcher_job_goes_with_the_job_clean_up(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    """Kubernetes 1.20's Job controller can create a launcher pod just as it fails the Job,
    and then never stops it; cleanPodPolicy Running stops it with the workers."""
    launcher = await started(client, mpijob(namespace, "left", run_policy={"backoffLimit": 0}))
    await simulated_node.fail(namespace, launcher["metadata"]["name"], exit_code=1)
    await wait_for_condition(client, namespace, "left", "Failed")
    batch_job = await client.get(BATCH_JOBS, "left-launcher", namespace)
    leftover: Object = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "left-launcher-leftover",
            "namespace": namespace,
            "labels": batch_job["spec"]["template"]["metadata"]["labels"],
            "ownerReferences": [
                {
                    "apiVersion": BATCH_JOBS.api_version,
                    "kind": BATCH_JOBS.kind,
                    "name": "left-launcher",
                    "uid": batch_job["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": batch_job["spec"]["template"]["spec"],
    }
    await client.create(PODS, leftover)
    await eventually(lambda: _no_pods(client, namespace))
    status = await job_status(client, MPIJOBS, namespace, "left")
    assert is_true(status, "Failed") and not is_true(status, "Succeeded")


async def _no_pods(client: Client, namespace: str) -> bool:
    return await live_pods(client, namespace) == {}


async def test_a_launcher_retried_by_its_job_within_the_backoff_limit_succeeds(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    first: list[str] = []

    def first_launcher(pod: Object) -> bool:
        if (pod["metadata"].get("labels") or {}).get(JOB_ROLE) != "launcher":
            return False
        if not first:
            first.append(pod["metadata"]["uid"])
        return bool(first[0] == pod["metadata"]["uid"])

    simulated_node.when(first_launcher, exit_code=1, after=0.2)
    simulated_node.when(LAUNCHER, exit_code=0, after=0.2)
    job = mpijob(namespace, "retry", run_policy={"backoffLimit": 1, "cleanPodPolicy": "None"})
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    await client.create(MPIJOBS, job)
    workers = worker_names("retry")

    async def workers_running() -> bool:
        found = await phases(client, namespace)
        return all(found.get(w) == "Running" for w in workers)

    await eventually(workers_running)
    before = {w: p["metadata"]["uid"] for w, p in (await live_pods(client, namespace)).items()}
    status = await wait_for_condition(client, namespace, "retry", "Succeeded")
    # The launcher Job ran a second pod; the MPIJob was not failed, nor torn down and rerun.
    assert not is_true(status, "Failed")
    launchers = {
        p["metadata"]["uid"]: p["status"]["phase"]
        for p in await launcher_pods(client, namespace, "retry")
    }
    assert launchers.pop(first[0]) == "Failed"
    assert list(launchers.values()) == ["Succeeded"]
    pods = await live_pods(client, namespace)
    assert {w: pods[w]["metadata"]["uid"] for w in workers} == {w: before[w] for w in workers}
    await wait_for_replicas(client, namespace, "retry", {"Launcher": {"succeeded": 1, "failed": 1}})


async def test_a_failed_worker_is_counted_not_replaced_and_the_launcher_decides(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    launcher = await started(client, mpijob(namespace, "oom", run_policy={"backoffLimit": 0}))
    victim = "oom-worker-1"
    uid = (await live_pods(client, namespace))[victim]["metadata"]["uid"]
    await simulated_node.fail(namespace, victim, exit_code=137, reason="OOMKilled")
    await wait_for_replicas(
        client,
        namespace,
        "oom",
        {"Launcher": {"active": 1}, "Worker": {"active": 1, "failed": 1}},
    )
    await resync(kubeflow, Request(namespace, "oom"))
    status = await job_status(client, MPIJOBS, namespace, "oom")
    assert not is_true(status, "Failed"), "a failed worker alone does not fail an MPIJob"
    pod = (await live_pods(client, namespace))[victim]
    assert (pod["metadata"]["uid"], pod["status"]["phase"]) == (uid, "Failed")

    # mpirun on the launcher notices and fails: that fails the job.
    await simulated_node.fail(namespace, launcher["metadata"]["name"], exit_code=1)
    status = await wait_for_condition(client, namespace, "oom", "Failed")
    assert condition_of(status, "Failed")["reason"].startswith("BackoffLimitExceeded")

    # cleanPodPolicy Running: the running worker goes, the failed one stays for its logs.
    async def cleaned_up() -> bool:
        return await phases(client, namespace) == {victim: "Failed"}

    await eventually(cleaned_up)


async def test_an_evicted_worker_fails_the_job_as_evicted(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    await started(client, mpijob(namespace, "evicted"))
    await simulated_node.evict(namespace, "evicted-worker-0")
    status = await wait_for_condition(client, namespace, "evicted", "Failed")
    failed = condition_of(status, "Failed")
    assert (failed["reason"], failed["message"]) == ("MPIJobEvicted", "1/2 workers are evicted")
    events = await wait_for_kubeflow_events(client, namespace, "evicted", "MPIJobEvicted")
    assert events["MPIJobEvicted"] == ("Warning", "1/2 workers are evicted")


# Run policy -----------------------------------------------------------------------------------


BOTH_KEPT = {"tidy-worker-0": "Succeeded", "tidy-worker-1": "Running"}
CLEAN_POD_POLICIES = {
    "default": (None, BOTH_KEPT),  # Kubeflow's default is None
    "None": ("None", BOTH_KEPT),
    "Running": ("Running", {"tidy-worker-0": "Succeeded"}),
    "All": ("All", {}),
}
"""cleanPodPolicy (None: not set) and the workers it keeps, by test id."""


@pytest.mark.parametrize("case", list(CLEAN_POD_POLICIES.values()), ids=list(CLEAN_POD_POLICIES))
async def test_clean_pod_policy_decides_which_workers_outlive_the_job(
    client: Client,
    namespace: str,
    kubeflow: Controller,
    simulated_node: SimulatedNode,
    case: tuple[str | None, dict[str, str]],
) -> None:
    policy, kept = case
    job = mpijob(namespace, "tidy")
    if policy is None:
        del job["spec"]["runPolicy"]["cleanPodPolicy"]
    else:
        job["spec"]["runPolicy"]["cleanPodPolicy"] = policy
    simulated_node.when(f"{JOB_NAME}=tidy,{JOB_ROLE}=worker,{REPLICA_INDEX}=0", after=0.2)
    await client.create(MPIJOBS, job)
    launcher = (await running_launcher(client, namespace, "tidy"))["metadata"]["name"]

    async def one_worker_done() -> bool:
        found = await phases(client, namespace)
        return (found.get("tidy-worker-0"), found.get("tidy-worker-1")) == ("Succeeded", "Running")

    await eventually(one_worker_done)
    await simulated_node.succeed(namespace, launcher)
    await wait_for_condition(client, namespace, "tidy", "Succeeded")
    expected = {launcher: "Succeeded", **kept}

    async def cleaned_up() -> bool:
        return await phases(client, namespace) == expected

    await eventually(cleaned_up)
    await resync(kubeflow, Request(namespace, "tidy"))
    assert await phases(client, namespace) == expected
    assert await exists(client, BATCH_JOBS, namespace, "tidy-launcher")


async def test_at_startup_the_launcher_job_does_not_wait_for_ready_workers(
    client: Client, namespace: str, kubeflow: Controller, unready_node: SimulatedNode
) -> None:
    await client.create(MPIJOBS, mpijob(namespace, "eager"))
    workers = worker_names("eager")

    async def workers_running() -> bool:
        found = await phases(client, namespace)
        return all(found.get(w) == "Running" for w in workers)

    await eventually(workers_running)
    await launcher_job(client, namespace, "eager")
    pods = await live_pods(client, namespace)
    for worker in workers:  # never Ready: their node holds them back
        ready = [c for c in pods[worker]["status"]["conditions"] if c["type"] == "Ready"]
        assert [c["status"] for c in ready] == ["False"]


async def test_wait_for_workers_ready_creates_the_launcher_job_once_every_worker_is_ready(
    client: Client, namespace: str, kubeflow: Controller, unready_node: SimulatedNode
) -> None:
    job = mpijob(namespace, "patient", launcherCreationPolicy="WaitForWorkersReady")
    await client.create(MPIJOBS, job)
    workers = worker_names("patient")

    async def workers_running() -> bool:
        return await phases(client, namespace) == dict.fromkeys(workers, "Running")

    await eventually(workers_running)
    await wait_for_replicas(client, namespace, "patient", {"Worker": {"active": 2}})
    await resync(kubeflow, Request(namespace, "patient"))
    assert not await exists(client, BATCH_JOBS, namespace, "patient-launcher")

    await unready_node.set_ready(namespace, workers[0], True)
    await wait_until_settled(client, kubeflow, PODS, Request(namespace, workers[0]))
    await resync(kubeflow, Request(namespace, "patient"))
    assert not await exists(client, BATCH_JOBS, namespace, "patient-launcher")

    await unready_node.set_ready(namespace, workers[1], True)
    await launcher_job(client, namespace, "patient")


async def test_run_launcher_as_worker_lists_the_launcher_first(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    job = mpijob(namespace, "law", runLauncherAsWorker=True, slotsPerWorker=2)
    await client.create(MPIJOBS, job)
    await running_launcher(client, namespace, "law")
    hosts = [host(pod, "law", namespace) for pod in ("law-launcher", *worker_names("law"))]
    await lists_hosts(client, namespace, "law", hosts, slots=2)
    service = await client.get(SERVICES, "law", namespace)
    assert service["spec"]["publishNotReadyAddresses"] is True
    # Replica indices are unique across the group: the launcher is 0, the workers 1 and 2.
    template = (await client.get(BATCH_JOBS, "law-launcher", namespace))["spec"]["template"]
    assert template["metadata"]["labels"][REPLICA_INDEX] == "0"
    pods = await live_pods(client, namespace)
    assert [pods[w]["metadata"]["labels"][REPLICA_INDEX] for w in worker_names("law")] == [
        "1",
        "2",
    ]


async def test_deleting_the_job_removes_every_child(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    await started(client, mpijob(namespace, "gone"))
    await client.delete(MPIJOBS, "gone", namespace)
    await wait_for_deletion(client, MPIJOBS, namespace, "gone")
    await eventually(lambda: children_gone(client, namespace, "gone"), timeout=60)


async def test_a_job_managed_by_multikueue_is_left_alone(
    client: Client, namespace: str, kubeflow: Controller, simulated_node: SimulatedNode
) -> None:
    remote = mpijob(namespace, "remote", run_policy={"managedBy": MULTIKUEUE})
    await client.create(MPIJOBS, remote)
    local = mpijob(namespace, "local", run_policy={"managedBy": "kubeflow.org/mpi-operator"})
    await client.create(MPIJOBS, local)
    await wait_for_condition(client, namespace, "local", "Created")  # the controller serves
    # MultiKueue copies the worker cluster's status in; the controller must leave it be.
    running = {
        "type": "Running",
        "status": "True",
        "reason": "MPIJobRunning",
        "message": f"MPIJob {namespace}/remote is running.",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "lastUpdateTime": "2026-01-01T00:00:00Z",
    }
    copied = {
        "conditions": [running],
        "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 2}},
        "startTime": "2026-01-01T00:00:00Z",
    }
    stored = await client.patch(
        MPIJOBS, "remote", {"status": copied}, namespace, subresource="status"
    )
    assert is_true(stored["status"], "Running")
    await resync(kubeflow, Request(namespace, "remote"))
    assert await job_status(client, MPIJOBS, namespace, "remote") == stored["status"]
    for resource, child in (
        (SERVICES, "remote"),
        (CONFIGMAPS, "remote-config"),
        (SECRETS, "remote-ssh"),
        (BATCH_JOBS, "remote-launcher"),
    ):
        assert not await exists(client, resource, namespace, child), child
    assert not [p for p in await live_pods(client, namespace) if p.startswith("remote-")]
    assert await events_about(client, namespace, "remote") == {}


# The command line, offline ---------------------------------------------------------------------


def test_jobcore_validate_checks_a_kubeflow_mpijob(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = tmp_path / "pi.yaml"
    good.write_text(PI)
    code, out, err = run_cli(capsys, "validate", str(good))
    assert (code, out) == (0, f"{good}:1: MPIJob pi: valid\n"), err

    bad = tmp_path / "two-launchers.yaml"
    bad.write_text(
        PI.replace("    Launcher:\n      replicas: 1\n", "    Launcher:\n      replicas: 2\n")
    )
    code, out, err = run_cli(capsys, "validate", str(bad))
    assert (code, out) == (1, "")
    launcher = PI.splitlines().index("    Launcher:") + 1
    (problem,) = err.splitlines()
    line = int(problem.split(":")[1])
    assert launcher <= line <= launcher + 1, problem  # at the Launcher's replicas
    assert "Launcher" in problem and "replicas" in problem, problem


def test_jobcore_render_prints_kubeflows_children(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "pi.yaml"
    path.write_text(PI)
    code, out, err = run_cli(capsys, "render", "--redact-secrets", str(path))
    assert code == 0, err
    children = list(yaml.safe_load_all(out))
    assert sorted((c["kind"], c["metadata"]["name"]) for c in children) == [
        ("ConfigMap", "pi-config"),
        ("Job", "pi-launcher"),
        ("Pod", "pi-worker-0"),
        ("Pod", "pi-worker-1"),
        ("Secret", "pi-ssh"),
        ("Service", "pi"),
    ]
    for child in children:
        assert child["metadata"]["namespace"] == "default"
        (owner,) = child["metadata"]["ownerReferences"]
        assert (owner["apiVersion"], owner["kind"], owner["name"], owner["controller"]) == (
            "kubeflow.org/v2beta1",
            "MPIJob",
            "pi",
            True,
        )
    by_name = {c["metadata"]["name"]: c for c in children}
    hosts = [host(w, "pi", "default") for w in worker_names("pi")]
    assert by_name["pi-config"]["data"]["hostfile"] == "".join(f"{h} slots=1\n" for h in hosts)
    assert by_name["pi-ssh"]["type"] == SSH_AUTH
    launcher = by_name["pi-launcher"]["spec"]["template"]["spec"]["containers"][0]
    worker = by_name["pi-worker-0"]["spec"]["containers"][0]
    assert "/home/mpiuser/.ssh" in mounts_of(launcher) & mounts_of(worker)
    assert (worker["command"], worker["args"]) == (
        ["/usr/sbin/sshd"],
        ["-De", "-f", "/home/mpiuser/.sshd_config"],
    )
