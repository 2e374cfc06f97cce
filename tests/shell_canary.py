"""Adversarial strings in every field a launcher hands on, run through the real launcher scripts.

For each kind, hypothesis puts strings built to run a canary program (`;`, `$(...)`,
backquotes, quotes, newlines, `&&`, `|`, globs, spaces, unicode, a leading `-`, thousands of
characters) into the fields that reach the launcher's or the workers' command lines. Each job
is read as the controller reads it (`jobcore.parse_job`, so the kind's validation); one it
accepts is planned (`plan`), and its launcher container's command runs under bash with
its env, the wait pointed at an empty hostfile. The launchers it starts are stubs first on
PATH (tests/shell_canary_stubs), each modelling which strings the real program writes into a
shell command and how it quotes them, down to the worker's shell: a stub ssh runs its remote
command through `sh -c` here. The launcher's environment is what the kubelet would give it
(`jobcore.testing`'s `environment`): literal values, `valueFrom` and `envFrom` resolved from
the job's ConfigMaps and Secrets, which validation does not see. The real Open MPI 4 mpirun
runs a share of the MPIJobs, with the stub ssh as its agent. Not covered: ColossalAIJob's env
values, which colossalai run puts in double quotes on purpose (docs/colossalaijob.md).

`python -m tests.shell_canary` prints the counts; tests/unit/test_shell_canary.py asserts them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from jobcore import PODS
from jobcore import Resource
from jobcore._jobs.plan import plan
from jobcore.jobs import JobKind
from jobcore.jobs import Observed
from jobcore.jobs import parse_job
from jobcore.testing._podsetup import Sources
from jobcore.testing._podsetup import environment
from jobkinds.mpi.mpirun import HOSTFILE
from jobkinds.mpi.openmpi import UNSAFE_ENV_EXIT
from tests.shell_canary_jobs import KINDS
from tests.shell_canary_jobs import OPEN_MPI_MPIJOB
from tests.shell_canary_jobs import CanaryKind
from tests.shell_canary_jobs import Case

STUBS = Path(__file__).resolve().parent / "shell_canary_stubs"
REAL_MPIRUN = Path("/usr/bin/mpirun")
"""Debian's Open MPI 4 (scripts/frameworks.sh openmpi4)."""
TEMPLATES = (
    *(";{p};", ";{p}${{IFS}}x;", "$({p})", "`{p}`", "&&{p}", "||{p}#", "|{p}", "&{p}&", ">{f}"),
    *(";:>{f};", "$(:>{f})", "\n{p}\n", "\r\n{p}\r\n", '";{p};"', "';{p};'", '"$({p})"'),
    *("'$({p})'", '\\";{p};#'),
)
"""Payloads; `{p}` is the canary program, `{f}` the file it creates. None names the program as
a word of its own: a field a user fills with a program to run (cmd, a launch agent) runs it."""
AROUND = ("", "/opt/mpi", "-", "--", "-x ", "--prefix=", "a b", "'", '"', "\\", "*", "~", "é", "?[")
_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=12)
_LAUNCHERS = ("JOBCORE_MPI", "JOBCORE_HOROVOD", "JOBCORE_COLOSSALAI")
"""The prefixes of the launch scripts' `_HOSTFILE` and `_WAIT_SECONDS` variables."""


class CanaryFired(AssertionError):
    """A field's value ran as a command."""


def _count(label: str) -> int:
    """A count of `Counts`, shown as `label` in its summary."""
    count: int = dataclasses.field(default=0, metadata={"label": label})
    return count


@dataclasses.dataclass
class Counts:
    """What the canary runs did; `str` summarises it, each count by its label."""

    tried: int = _count("adversarial inputs tried")
    rejected: int = _count("rejected by validation")
    scripts_run: int = _count("launcher scripts run")
    refused_at_launch: int = _count("of them refusing their environment")
    real_mpirun_runs: int = _count("by the real Open MPI mpirun")
    remote_commands: int = _count("remote commands run by sh")
    """Commands the launchers handed to the stub ssh, run by `sh -c`."""
    executed: int = _count("payloads executed")

    def __str__(self) -> str:
        counts = dataclasses.fields(self)
        return ", ".join(f"{c.metadata['label']}: {getattr(self, c.name)}" for c in counts)


@dataclasses.dataclass(frozen=True)
class Sandbox:
    """Folders of stubs (`bin`; `real-bin`, without mpirun's), files, and the canary program."""

    root: Path
    fired: Path
    """What the canary program creates."""
    remote_log: Path
    """What the stub ssh ran, each command ended by a NUL."""
    canary: Path
    """The canary program, in `bin` and `real-bin`."""

    @classmethod
    def at(cls, root: Path) -> Sandbox:
        return cls(root, root / "fired", root / "remote-commands", root / "bin" / "canary")

    def bin(self, *, real_mpirun: bool) -> Path:
        return self.root / ("real-bin" if real_mpirun else "bin")


@contextmanager
def sandbox() -> Iterator[Sandbox]:
    """A fresh Sandbox; `bin` has every stub, `real-bin` all but mpirun's."""
    root = Path(tempfile.mkdtemp(prefix="jobcore-canary-"))
    try:
        box = Sandbox.at(root)
        for real in (False, True):
            folder = box.bin(real_mpirun=real)
            folder.mkdir()
            for stub in STUBS.iterdir():
                if not (real and stub.name == "mpirun"):
                    shutil.copy(stub, folder / stub.name)
            # What a worker would start: Open MPI's daemon fails at once, so mpirun stops.
            (folder / "orted").write_text("#!/bin/sh\nexit 1\n")
            for name in ("hydra_pmi_proxy", "torchrun"):
                (folder / name).write_text("#!/bin/sh\n")
            (folder / "canary").write_text(f'#!/bin/sh\n: >>"{box.fired}"\n')
            for path in folder.iterdir():
                path.chmod(0o755)
        (root / "empty").write_text("")
        (root / "hostfile").write_text("worker-0 slots=2\n")
        yield box
    finally:
        shutil.rmtree(root, ignore_errors=True)


def adversarial(box: Sandbox) -> st.SearchStrategy[str]:
    """Strings that try to run the canary, with noise around them, sometimes very long."""
    payload = st.sampled_from(TEMPLATES).map(lambda t: t.format(p=box.canary, f=box.fired))
    framed = st.builds(lambda a, p, b: a + p + b, st.sampled_from(AROUND) | _TEXT, payload, _TEXT)
    return st.one_of(
        framed,
        st.builds(lambda p, n: p * n, framed, st.integers(2, 300)),
        st.builds(lambda a, b: a + b, _TEXT, _TEXT),
    )


# Running the launcher -------------------------------------------------------------------------


class CanarySources(Sources):
    """The ConfigMaps and Secrets a canary job refers to, by name, as the kubelet reads them."""

    def __init__(self, objects: dict[str, dict[str, str]]) -> None:
        self._objects = objects

    async def data(self, resource: Resource, name: str, *, optional: bool) -> dict[str, bytes]:
        return {key: value.encode() for key, value in self._objects[name].items()}


@dataclasses.dataclass(frozen=True)
class Launcher:
    """The launcher container the controller would create, and its environment in the pod."""

    container: dict[str, Any]
    env: dict[str, str]


def launcher_of(kind: JobKind[Any], case: Case) -> Launcher | None:
    """The launcher the controller would create for `case`, or None if the kind rejects the
    job. A launcher that exists is rendered again, so no worker needs to be Ready."""
    job, errors = parse_job(kind, case.doc)
    if job is None or errors:
        return None
    name = f"{job.name}-launcher"
    pods = plan(kind, job, Observed({PODS: {name: {"metadata": {"name": name}}}}))
    pod = next(p for p in pods if p["kind"] == "Pod" and p["metadata"]["name"] == name)
    container = kind.containers["launcher"]
    found: dict[str, Any] = next(c for c in pod["spec"]["containers"] if c["name"] == container)
    sources = CanarySources(case.sources)
    env, _ = asyncio.run(environment(sources, pod, found, base={}, ip="10.0.0.2", host_ip=""))
    return Launcher(found, env)


@dataclasses.dataclass(frozen=True)
class Run:
    """What one launcher did: whether it refused its environment, and how many commands it
    handed to the stub ssh."""

    refused: bool
    remote_commands: int


def run_launcher(launcher: Launcher, box: Sandbox, *, real_mpirun: bool = False) -> Run:
    """The container's command under bash (or as it is), with its environment, the stubs first
    on PATH and the wait pointed at an empty hostfile; raises CanaryFired."""
    container = launcher.container
    argv = [*container["command"], *container.get("args", ())]
    env = dict(launcher.env)
    for launcher_prefix in _LAUNCHERS:
        env |= {
            f"{launcher_prefix}_HOSTFILE": str(box.root / "empty"),
            f"{launcher_prefix}_WAIT_SECONDS": "1",
        }
    env |= {
        "PATH": f"{box.bin(real_mpirun=real_mpirun)}:/usr/bin:/bin",
        "HOME": str(box.root),
        "CANARY_WORKDIR": container.get("workingDir", "/"),
        "CANARY_REMOTE_LOG": str(box.remote_log),
    }
    if real_mpirun:  # the ConfigMap's hostfile, here, and the stub ssh as the agent
        argv = [str(box.root / "hostfile") if a == HOSTFILE else a for a in argv]
        env |= {
            "OMPI_MCA_orte_default_hostfile": str(box.root / "hostfile"),
            "OMPI_MCA_plm_rsh_agent": str(box.bin(real_mpirun=True) / "ssh"),
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        }
    box.remote_log.write_bytes(b"")
    run = subprocess.run(argv, env=env, cwd=box.root, capture_output=True, timeout=60, check=False)
    remote = box.remote_log.read_bytes()
    if box.fired.exists():
        box.fired.unlink()
        raise CanaryFired(
            f"the canary ran: launcher {argv!r}\nenv {env!r}\nremote commands {remote!r}\n"
            f"output {run.stdout!r} {run.stderr!r}"
        )
    refused = run.returncode == UNSAFE_ENV_EXIT and run.stderr.startswith(b"jobcore: not starting")
    return Run(refused, remote.count(b"\0"))


def check_kind(
    canary: CanaryKind,
    box: Sandbox,
    counts: Counts,
    *,
    examples: int,
    real_mpirun: bool = False,
) -> None:
    """`examples` adversarial jobs of one kind: each rejected, or run without the canary firing.

    Raises CanaryFired (shrunk to a smallest example by hypothesis) when a payload runs.
    """

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=canary.jobs(adversarial(box)))
    def one(case: Case) -> None:
        counts.tried += 1
        launcher = launcher_of(canary.kind, case)
        if launcher is None:
            counts.rejected += 1
            return
        counts.scripts_run += 1
        try:
            run = run_launcher(launcher, box, real_mpirun=real_mpirun)
        except CanaryFired:
            counts.executed += 1
            raise
        counts.refused_at_launch += run.refused
        counts.real_mpirun_runs += real_mpirun and not run.refused
        counts.remote_commands += run.remote_commands

    one()


EXAMPLES = {"MPIJob": 1000, "HorovodJob": 800, "ColossalAIJob": 600}
"""Per kind; about a third of them pass validation, and run."""
REAL_MPIRUN_EXAMPLES = 250


def check_all(counts: Counts) -> None:
    """Every kind, then MPIJob's Open MPI jobs with the real mpirun if it is installed."""
    with sandbox() as box:
        for name, canary in KINDS.items():
            check_kind(canary, box, counts, examples=EXAMPLES[name])
        if REAL_MPIRUN.exists():
            examples = REAL_MPIRUN_EXAMPLES
            check_kind(OPEN_MPI_MPIJOB, box, counts, examples=examples, real_mpirun=True)


def main() -> int:
    counts = Counts()
    try:
        check_all(counts)
    except CanaryFired as fired:
        print(fired, file=sys.stderr)
    print(counts)
    return 1 if counts.executed else 0


if __name__ == "__main__":
    sys.exit(main())
