"""spec.mpiImplementation: what Open MPI, MPICH and Intel MPI jobs render, and what each refuses."""

from __future__ import annotations

from typing import Any

import pytest

from jobcore import Object
from jobcore.jobs import Job
from jobcore.jobs import parse_job
from jobcore.testing import by_name
from jobcore.testing import container_named
from jobcore.testing import env_of
from jobcore.testing import error_messages
from jobcore.testing import observed_of
from jobcore.testing import pod_of
from jobkinds.mpijob import MPIJobKind
from jobkinds.mpijob.spec import MPIJobSpec
from tests.support.mpijobs import mpijob

KIND = MPIJobKind()
NS = "team-a"
HYDRA = ["MPICH", "IntelMPI", "Intel"]


def _worker(extra: list[str]) -> dict[str, Any]:
    return {
        "replicas": 2,
        "extraMPIArgs": extra,
        "cmd": ["./train"],
        "template": {"spec": {"containers": [{"name": "mpi-worker", "image": "mpi:latest"}]}},
    }


def job_of(**spec: Any) -> Job[MPIJobSpec]:
    job, errors = parse_job(KIND, mpijob(NS, "pi", **spec))
    assert job is not None, errors
    return job


def errors_of(**spec: Any) -> dict[str, str]:
    job, errors = parse_job(KIND, mpijob(NS, "pi", **spec))
    assert job is None
    return error_messages(errors)


def rendered(job: Job[MPIJobSpec]) -> dict[str, Object]:
    """What the kind renders once every worker is Ready: the launcher too."""
    names = [f"pi-worker-{i}" for i in range(job.spec.worker.replicas)]
    workers = [pod_of(job, name, "worker", i, ready=True) for i, name in enumerate(names)]
    return by_name(KIND.render(job, observed_of(*workers)))


def launcher(job: Job[MPIJobSpec]) -> Any:
    return container_named(rendered(job)["pi-launcher"], "mpi-launcher")


def env(job: Job[MPIJobSpec]) -> dict[str, str]:
    return env_of(launcher(job))


OPEN_MPI = {"worker": _worker(["-N", "2"]), "mpiHome": "/opt/ompi", "mca": {"btl": "^openib"}}
"""An Open MPI job: 2 processes a worker, Open MPI installed under /opt/ompi."""


def hydra(implementation: str) -> dict[str, Any]:
    """A job of an implementation of Hydra: 2 processes a worker, installed under /opt/mpi."""
    return {
        "mpiImplementation": implementation,
        "mpiHome": "/opt/mpi",
        "worker": _worker(["-ppn", "2"]),
    }


@pytest.mark.parametrize(
    ("spec", "run", "host_line"),
    [
        (
            OPEN_MPI,
            "mpirun --hostfile /etc/mpi/hostfile --prefix /opt/ompi -mca btl ^openib -N 2 ./train",
            "{host} slots=2",
        ),
        *(
            (hydra(name), "mpiexec -f /etc/mpi/hostfile -ppn 2 ./train", "{host}:2")
            for name in HYDRA
        ),
    ],
    ids=["OpenMPI", *HYDRA],
)
def test_each_implementation_runs_its_launcher_over_its_hostfile_from_mpi_home(
    spec: dict[str, Any], run: str, host_line: str
) -> None:
    """`run`: the launcher's command after the wait script, its words split at spaces."""
    job = job_of(**spec)
    assert launcher(job)["command"][4:] == run.split()
    hosts = [f"pi-worker-{i}.pi.{NS}.svc.cluster.local" for i in (0, 1)]
    hostfile = "".join(host_line.format(host=host) + "\n" for host in hosts)
    assert rendered(job)["pi-hostfile"]["data"]["hostfile"] == hostfile
    assert env(job)["JOBCORE_MPI_HOME"] == spec["mpiHome"]


def test_open_mpi_is_the_default_and_keeps_todays_launcher() -> None:
    job = job_of(**OPEN_MPI)
    assert job.spec.mpi_implementation == "OpenMPI"
    values = env(job)
    assert values["OMPI_MCA_orte_set_default_slots"] == values["PRTE_MCA_prte_set_default_slots"]
    assert not any(name.startswith(("HYDRA_", "I_MPI_", "JOBCORE_MPI_LAUNCHER")) for name in values)
    children = rendered(job)
    assert "hostname" not in children["pi-launcher"]["spec"]
    assert "dnsConfig" not in children["pi-worker-0"]["spec"]
    assert children["pi"]["spec"]["selector"] == job.labels("worker")


@pytest.mark.parametrize("implementation", HYDRA)
def test_hydra_jobs_bootstrap_over_ssh_and_call_the_launcher_back_at_its_address(
    implementation: str,
) -> None:
    job = job_of(**hydra(implementation))
    values = env(job)
    assert values["HYDRA_LAUNCHER"] == values["I_MPI_HYDRA_BOOTSTRAP"] == "ssh"
    assert values["HYDRA_HOST_FILE"] == values["I_MPI_HYDRA_HOST_FILE"] == "/etc/mpi/hostfile"
    assert not any(name.startswith(("OMPI_", "PRTE_")) for name in values)

    # Hydra's proxies call the launcher back at its pod's own interface's address: no worker
    # looks up a name for it, which a Service `pi-launcher` in the namespace could answer.
    assert values["HYDRA_IFACE"] == values["I_MPI_HYDRA_IFACE"] == "eth0"
    children = rendered(job)
    assert "hostname" not in children["pi-launcher"]["spec"]
    assert children["pi"]["spec"]["selector"] == job.labels("worker")
    assert "dnsConfig" not in children["pi-worker-0"]["spec"]
    assert not any(name.startswith("JOBCORE_MPI_LAUNCHER") for name in values)


def test_hydra_on_the_nodes_network_keeps_its_hostname() -> None:
    """A host-network pod's interfaces are the node's, whose names are not known here."""
    spec = hydra("MPICH")
    spec["worker"]["template"]["spec"]["hostNetwork"] = True
    assert not any(name.endswith("_IFACE") for name in env(job_of(**spec)))


def test_hydra_forwards_no_env_by_flag_as_it_passes_the_whole_environment() -> None:
    container = {"name": "mpi-worker", "image": "x", "env": [{"name": "A", "value": "1"}]}
    worker = {"replicas": 2, "cmd": ["./train"], "template": {"spec": {"containers": [container]}}}
    hydra = launcher(job_of(mpiImplementation="MPICH", worker=worker))
    assert "-x" not in hydra["command"] and "-genvlist" not in hydra["command"]
    assert {"name": "A", "value": "1"} in hydra["env"]
    assert _after(launcher(job_of(worker=worker))["command"], "-x", 2) == ["-x", "A"]


@pytest.mark.parametrize("implementation", HYDRA)
def test_open_mpi_options_are_field_errors_for_hydra(implementation: str) -> None:
    errors = errors_of(
        mpiImplementation=implementation,
        mca={"btl": "^openib"},
        worker=_worker(["--prefix", "/opt/mpi", "-N", "2"]),
    )
    assert set(errors) == {"spec.mca", "spec.worker.extraMPIArgs"}
    assert "Open MPI's" in errors["spec.mca"]
    assert "--prefix is Open MPI's" in errors["spec.worker.extraMPIArgs"]


@pytest.mark.parametrize(
    ("implementation", "args", "problem"),
    [
        ("MPICH", ["-ppn", "0"], "-ppn needs a positive integer"),
        ("IntelMPI", ["-perhost"], "got nothing"),
        ("MPICH", ["-f", "/tmp/hosts"], "-f: the launcher passes the workers' hostfile itself"),
        ("OpenMPI", ["-N", "x"], "-N needs a positive integer"),
    ],
)
def test_per_node_and_hostfile_flags_are_checked_per_implementation(
    implementation: str, args: list[str], problem: str
) -> None:
    errors = errors_of(mpiImplementation=implementation, worker=_worker(args))
    assert problem in errors["spec.worker.extraMPIArgs"]


def test_an_unknown_implementation_is_refused_naming_the_field() -> None:
    errors = errors_of(mpiImplementation="LAM")
    assert "'OpenMPI', 'IntelMPI', 'Intel' or 'MPICH'" in errors["spec.mpiImplementation"]


def test_the_current_t9k_shape_takes_the_field_in_mpi_config_or_spec() -> None:
    def current(**spec: Any) -> tuple[Job[MPIJobSpec] | None, list[str]]:
        obj = mpijob(NS, "pi", **spec)
        del obj["spec"]["worker"]
        obj["spec"]["replicaSpecs"] = [
            {
                "type": "worker",
                "replicas": 2,
                "template": {"spec": {"containers": [{"name": "worker", "image": "x"}]}},
            }
        ]
        job, errors = parse_job(KIND, obj)
        return job, [error.message for error in errors]

    config = {"script": ["./train"], "mpiImplementation": "MPICH"}
    in_config, _ = current(mpiConfig=config)
    assert in_config is not None and in_config.spec.mpi_implementation == "MPICH"
    beside, _ = current(mpiConfig={"script": ["./train"]}, mpiImplementation="IntelMPI")
    assert beside is not None and launcher(beside)["command"][4] == "mpiexec"
    _, errors = current(mpiConfig=config, mpiImplementation="OpenMPI")
    assert "spec.mpiConfig.mpiImplementation and spec.mpiImplementation differ" in errors[0]


def _after(command: list[str], flag: str, count: int) -> list[str]:
    start = command.index(flag)
    return command[start : start + count]
