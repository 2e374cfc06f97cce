"""Sample jobs that run real programs, one per kind and MPI, on the process-backed node or in
the real cluster's containers.

Shared by `jobcore sandbox --real`/`--cluster` and the real-tier tests, so what the sandbox
shows is what CI proves. Each job runs as root (or, through `nonroot`, as an unprivileged user)
on `scripts/frameworks.sh`'s installs, which `Installs` says where to find: the host's, or the
same installs inside `scripts/images.sh`'s images. Programs are written into a folder every pod
can read; in the cluster a compiled MPI program comes with its image.
"""

from __future__ import annotations

import copy
import pwd
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path

from controllers.sandbox import frameworks
from controllers.sandbox.allreduce import compile_allreduce
from jobcore import Object
from jobcore import Resource
from jobcore.launcher import Transport

MPIJOBS = Resource("batch.tensorstack.dev", "v1beta1", "MPIJob", "mpijobs")
IMAGE_FRAMEWORKS = Path("/opt/jobcore/frameworks")
"""Where `scripts/images.sh` installs each framework in its image, as on the host: NAME/home."""
IMAGE_PROGRAMS = Path("/opt/jobcore/programs")
"""Where the images of the compiled MPIs hold the allreduce, compiled by that MPI's mpicc."""


@dataclass(frozen=True)
class Installs:
    """Where a sample's pods find the frameworks: on the host (`HOST`, image "host", the process
    node's pods run host binaries), or each in its own image (`images`: framework -> image)."""

    images: Mapping[str, str] = field(default_factory=dict)

    @property
    def in_images(self) -> bool:
        return bool(self.images)

    def home(self, framework: str) -> Path:
        """The framework's prefix as the pod sees it."""
        if self.in_images:
            return IMAGE_FRAMEWORKS / framework / "home"
        return frameworks.home(framework)

    def image(self, framework: str) -> str:
        return self.images[framework] if self.in_images else "host"


HOST = Installs()

ROOT_ENV = [
    {"name": "OMPI_ALLOW_RUN_AS_ROOT", "value": "1"},
    {"name": "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "value": "1"},
]
"""Open MPI refuses to run as root unless told; the process-backed node runs pods as root."""


@dataclass(frozen=True)
class MPI:
    """An MPI the sandbox and tests run: its spec.mpiImplementation and its install."""

    implementation: str
    framework: str
    per_node_flag: str
    env: tuple[dict[str, str], ...] = ()


MPIS = {
    "openmpi": MPI("OpenMPI", "openmpi4", "-N"),
    "openmpi5": MPI("OpenMPI", "openmpi5", "-N"),
    "mpich": MPI("MPICH", "mpich", "-ppn"),
    # Intel's start-up report names each rank's host: proof the PingPong spans two workers.
    "intel": MPI("IntelMPI", "intel", "-ppn", ({"name": "I_MPI_DEBUG", "value": "5"},)),
}
"""The `--mpi` choices: Open MPI 4.1 (Debian), Open MPI 5, MPICH and Intel MPI (PyPI)."""


def mpi_program(
    mpi: str, folder: Path, *, failing_rank: int | None = None, installs: Installs = HOST
) -> list[str]:
    """What the job's ranks run: Intel MPI's own PingPong benchmark (impi-rt ships no
    compiler) between the two workers, else the allreduce; `failing_rank` then exits 3."""
    home = installs.home(MPIS[mpi].framework)
    if mpi == "intel":
        if failing_rank is None:
            # Ranks 0 and 2 ping-pong (one per worker) while the others wait; 17 sizes up to
            # 64 KiB, 20 rounds each, as four busy-polling ranks on two cores are slow.
            return ["IMB-MPI1", "-map", "2x2", "-msglog", "0:16", "-iter", "20", "PingPong"]
        script = folder / "exit3.sh"
        # The failing rank ends last: one that fails while the others still run can have
        # Intel's mpiexec kill them and exit 255 instead of with the rank's code.
        script.write_text(
            f'#!/bin/sh\n[ "$PMI_RANK" = {failing_rank} ] && {{ sleep 1; exit 3; }}\nexit 0\n'
        )
        script.chmod(0o755)
        folder.chmod(0o755)
        return [str(script)]
    failing = [str(failing_rank)] if failing_rank is not None else []
    if installs.in_images:
        return [str(IMAGE_PROGRAMS / "allreduce"), *failing]
    binary = folder / "allreduce"
    if not binary.exists():
        compile_allreduce(folder, home / "bin" / "mpicc")
    return [str(binary), *failing]


def mpi_job(
    mpi: str,
    folder: Path,
    command: list[str],
    *,
    name: str,
    namespace: str,
    workers: int = 2,
    slots: int = 2,
    installs: Installs = HOST,
) -> Object:
    """An MPIJob of `workers` x `slots` ranks running `command` with the chosen MPI."""
    chosen = MPIS[mpi]
    home = str(installs.home(chosen.framework))
    return {
        "apiVersion": MPIJOBS.api_version,
        "kind": MPIJOBS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "mpiImplementation": chosen.implementation,
            "mpiHome": home,
            "worker": {
                "replicas": workers,
                "extraMPIArgs": [chosen.per_node_flag, str(slots)],
                "cmd": command,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "mpi-worker",
                                "image": installs.image(chosen.framework),
                                "workingDir": str(folder),
                                "env": [*ROOT_ENV, *chosen.env],
                            }
                        ]
                    }
                },
            },
            "ssh": {"sshdPath": "/usr/sbin/sshd"},
        },
    }


# ColossalAIJob ---------------------------------------------------------------------------

COLOSSALAIJOBS = Resource("batch.tensorstack.dev", "v1beta1", "ColossalAIJob", "colossalaijobs")
COLOSSALAI_TRAIN = """\
import os
import socket
import sys

import torch
import torch.distributed as dist

# torchrun, started on every worker by `colossalai run`, sets RANK, WORLD_SIZE and MASTER_*.
dist.init_process_group("gloo")
rank, size, expected = dist.get_rank(), dist.get_world_size(), int(sys.argv[1])
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
print(f"rank {rank} of {size} on {socket.gethostname()}: sum={int(total.item())}", flush=True)
print(f"uid {os.getuid()} gid {os.getgid()} on {socket.gethostname()}", flush=True)
dist.destroy_process_group()
if size != expected:
    sys.exit(f"world size {size}, expected {expected}")
if len(sys.argv) > 2 and rank == int(sys.argv[2]):
    sys.exit(3)
"""
"""A gloo all-reduce that checks the world size (argv[1]); the rank in argv[2] exits 3."""


def colossalai_job(
    folder: Path,
    *,
    name: str,
    namespace: str,
    workers: int = 2,
    procs: int = 2,
    failing_rank: int | None = None,
    installs: Installs = HOST,
) -> Object:
    """`workers` x `procs` torch processes all-reducing over gloo, launched by colossalai run.

    The launcher's PATH puts ColossalAI's virtualenv first and keeps Debian's torchrun; colossalai
    run hands its environment and working directory to torchrun on every worker. Debian's
    torchrun 1.13 on Python 3.11 cannot read its default `--redirects 0` (Python 3.11 iterates
    only a flag enum's one-bit members), so the job has it tee each rank's stdout (`1`) instead.
    """
    script = folder / "train.py"
    script.write_text(COLOSSALAI_TRAIN)
    folder.chmod(0o755)
    args = [str(workers * procs)] + ([str(failing_rank)] if failing_rank is not None else [])
    path = f"{installs.home('colossalai') / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    image = installs.image("colossalai")
    return {
        "apiVersion": COLOSSALAIJOBS.api_version,
        "kind": COLOSSALAIJOBS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "ssh": {"authMountPath": "/root/.ssh", "sshdPath": "/usr/sbin/sshd"},
            "launcher": {
                "image": image,
                "workingDir": str(folder),
                "env": [{"name": "PATH", "value": path}],
            },
            "worker": {
                "replicas": workers,
                "procPerWorker": procs,
                "command": [script.name, *args],
                "torchArgs": ["--redirects=1", "--tee=1"],
                "template": {"spec": {"containers": [{"name": "worker", "image": image}]}},
            },
        },
    }


# HorovodJob ------------------------------------------------------------------------------

HOROVODJOBS = Resource("batch.tensorstack.dev", "v1beta1", "HorovodJob", "horovodjobs")
HOROVOD_ALLREDUCE = """\
import socket

import horovod.torch as hvd
import torch

hvd.init()
total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum)
print(f"rank {hvd.rank()} of {hvd.size()} on {socket.gethostname()}: sum={int(total.item())}")
"""
"""Every rank adds rank+1 with `hvd.allreduce`; each prints the sum."""


def horovod_job(cmd: list[str], *, name: str, namespace: str, installs: Installs = HOST) -> Object:
    """2 workers x 2 slots running `cmd`; the container's PATH starts with Horovod's virtualenv,
    as an image's would (horovodrun hands its environment to every rank)."""
    path = f"{installs.home('horovod') / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    image = installs.image("horovod")
    container = {"name": "worker", "image": image, "env": [{"name": "PATH", "value": path}]}
    return {
        "apiVersion": HOROVODJOBS.api_version,
        "kind": HOROVODJOBS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "worker": {
                "replicas": 2,
                "slotsPerWorker": 2,
                "cmd": cmd,
                "template": {"spec": {"containers": [container]}},
            },
        },
    }


def horovod_allreduce(folder: Path) -> list[str]:
    """The all-reduce program, written into `folder`; the command that runs it."""
    script = folder / "allreduce.py"
    script.write_text(HOROVOD_ALLREDUCE)
    folder.chmod(0o755)
    return ["python3", str(script)]


HOROVOD_ELASTIC = """\
import os
import sys
import time

import horovod.torch as hvd
import torch

stop_file, deadline = sys.argv[1], time.monotonic() + float(sys.argv[2])
hvd.init()
model = torch.nn.Linear(4, 1)
optimizer = hvd.DistributedOptimizer(
    torch.optim.SGD(model.parameters(), lr=0.01), named_parameters=model.named_parameters()
)
state = hvd.elastic.TorchState(model=model, optimizer=optimizer, step=0)


@hvd.elastic.run
def train(state):
    while True:
        # Every rank must stop at the same step: the stop decision is itself reduced.
        stop = os.path.exists(stop_file) or time.monotonic() > deadline
        flags = hvd.allreduce(torch.tensor([1.0, float(stop)]), op=hvd.Sum, name="flags")
        if flags[1] > 0:
            return
        optimizer.zero_grad()
        model(torch.ones(1, 4)).sum().backward()
        optimizer.step()
        if hvd.rank() == 0:
            print(f"step {state.step} size={hvd.size()} ranks={int(flags[0])}", flush=True)
        state.step += 1
        state.commit()
        time.sleep(0.25)


train(state)
if hvd.rank() == 0:
    print(f"done after {state.step} steps on {hvd.size()} ranks", flush=True)
"""
"""Elastic training that rank 0 reports step by step (`step N size=S`) until any rank sees the
stop file (argv[1]) or argv[2] seconds passed."""


def horovod_elastic(folder: Path, stop_file: str, seconds: float) -> list[str]:
    """The elastic training program, written into `folder`; the command that runs it until
    `stop_file` exists on any rank's host or `seconds` passed."""
    script = folder / "elastic.py"
    script.write_text(HOROVOD_ELASTIC)
    folder.chmod(0o755)
    return ["python", str(script), stop_file, str(seconds)]


# Non-root --------------------------------------------------------------------------------

NONROOT_USER = "mpiuser"
"""The user non-root samples run as (`scripts/frameworks.sh nonroot` creates it)."""
NONROOT_PORT = 2222
"""An unprivileged port for a non-root sshd."""


def nonroot(job: Object, user: pwd.struct_passwd) -> Object:
    """`job` (a sample of any kind) run as `user`, as Kubeflow's non-root pi example runs: the
    worker template's runAsUser, runAsGroup and fsGroup (so the user can read the ssh Secret's
    files), sshd on NONROOT_PORT, the keys at the user's ~/.ssh, no run-as-root allowance."""
    job = copy.deepcopy(job)
    spec = job["spec"]
    pod = spec["worker"]["template"]["spec"]
    pod["securityContext"] = {
        "runAsUser": user.pw_uid,
        "runAsGroup": user.pw_gid,
        "fsGroup": user.pw_gid,
    }
    for container in pod["containers"]:
        container["env"] = [e for e in container.get("env", ()) if e not in ROOT_ENV]
    ssh = spec.setdefault("ssh", {})
    mount = "authMountPath" if "authMountPath" in ssh else "sshAuthMountPath"  # ColossalAIJob's
    ssh.update({mount: f"{user.pw_dir}/.ssh", "port": NONROOT_PORT})
    return job


def through_agent(job: Object) -> Object:
    """`job` (a sample of any kind) launched through jobcore's agent (`spec.transport`), without
    the `spec.ssh` the agent does not use."""
    job = copy.deepcopy(job)
    job["spec"]["transport"] = "agent"
    job["spec"].pop("ssh", None)
    return job


# The sandbox's samples --------------------------------------------------------------------

KINDS = ("mpijob", "colossalaijob", "horovodjob")


@dataclass(frozen=True)
class Sample:
    """A job to run for real, and where to read its launcher's output."""

    resource: Resource
    job: Object
    launcher_container: str


def framework(kind: str, mpi: str) -> str:
    """The `scripts/frameworks.sh` install the sample of `kind` (and `mpi`) runs on."""
    return MPIS[mpi].framework if kind == "mpijob" else kind.removesuffix("job")


def sample(
    kind: str,
    mpi: str,
    folder: Path,
    *,
    namespace: str = "default",
    installs: Installs = HOST,
    transport: Transport = "ssh",
) -> Sample:
    """The sample job of `kind` (with `mpi` for an MPIJob) whose programs live in `folder`,
    launched over `transport`."""
    found = _sample(kind, mpi, folder, namespace=namespace, installs=installs)
    return found if transport == "ssh" else replace(found, job=through_agent(found.job))


def _sample(kind: str, mpi: str, folder: Path, *, namespace: str, installs: Installs) -> Sample:
    if kind == "mpijob":
        command = mpi_program(mpi, folder, installs=installs)
        job = mpi_job(
            mpi, folder, command, name="mpi-example", namespace=namespace, installs=installs
        )
        return Sample(MPIJOBS, job, "mpi-launcher")
    if kind == "colossalaijob":
        job = colossalai_job(
            folder, name="colossalai-example", namespace=namespace, installs=installs
        )
        return Sample(COLOSSALAIJOBS, job, "launcher")
    if kind == "horovodjob":
        command = horovod_allreduce(folder)
        job = horovod_job(command, name="horovod-example", namespace=namespace, installs=installs)
        return Sample(HOROVODJOBS, job, "launcher")
    raise ValueError(f"unknown kind {kind!r}; known: {', '.join(KINDS)}")
