"""Adversarial strings in every field a launcher hands on, run through the real launcher scripts.

For each kind, over ssh and through jobcore's agent, every field is set to every payload (a
canary program run by `;`, `$(...)`, backquotes, quotes, newlines, `&&`, `|` and more), one job
per pair, and hypothesis draws more jobs with up to three fields set to such strings amid
globs, spaces, unicode, a leading `-` or thousands of characters. Each job is read as the
controller reads it (`jobcore.parse_job`, so the kind's validation); one it accepts is planned
(`plan`), and its launcher container's command runs with its env, the wait pointed at an
empty hostfile. The launchers it starts are stubs first on PATH (tests/support/shell_canary_stubs),
each modelling which strings the real program writes into a shell command and how it quotes
them, down to the worker's shell: a stub ssh runs its remote command through `sh -c` here. The
launcher's environment is what the kubelet would give it (`jobcore.testing`'s
`environment`): literal values, `valueFrom` and `envFrom` resolved from the job's ConfigMaps
and Secrets, which validation does not see. The real Open MPI 4 mpirun runs a share of the
MPIJobs, with the stub ssh or the stub agent as its remote shell. Not covered: ColossalAIJob's
env values over ssh, which colossalai run puts in double quotes on purpose
(docs/colossalaijob.md); Kubeflow's MPIJob over ssh, whose launcher runs the user's own command
with no jobcore program in between.

Through the agent, the pods' agent folder is the sandbox's, holding a stub agent
(shell_canary_stubs/agent): `launch` is the real agent's (`scripts/agent.sh` builds it), its
environment check included, without its wait for the workers' agents (there are none: the
wait is what the ssh launchers' empty hostfile skips); `rsh` joins its command's words as the
real one does and runs them with `sh -c`, as the worker's `serve` does. A stub there: the real
`rsh` needs a serving agent at the worker's name, which this machine cannot resolve.

Launchers run PARALLEL at once; a canary that fired is traced to its job by running them again
one at a time. `python -m tests.support.shell_canary` prints the counts by kind and transport;
tests/unit/kinds/test_shell_canary.py asserts them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from jobcore import BATCH_JOBS
from jobcore import PODS
from jobcore import Resource
from jobcore._jobs.plan import plan
from jobcore.jobs import JobKind
from jobcore.jobs import Observed
from jobcore.jobs import parse_job
from jobcore.launcher import AGENT
from jobcore.launcher import AGENT_DIR
from jobcore.testing._nodes.podsetup import Sources
from jobcore.testing._nodes.podsetup import environment
from jobkinds.mpi.mpirun import HOSTFILE
from jobkinds.mpi.openmpi import UNSAFE_ENV_EXIT
from tests.support.draws import fixed_draws
from tests.support.shell_canary_jobs import AGENT_KINDS
from tests.support.shell_canary_jobs import KINDS
from tests.support.shell_canary_jobs import CanaryKind
from tests.support.shell_canary_jobs import Case
from tests.support.shell_canary_jobs import open_mpi_only

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

    fields: int = 0
    payloads: int = 0
    """`fields` x `payloads` pairs, a job each (none for the real mpirun's runs)."""
    tried: int = _count("adversarial inputs tried")
    rejected: int = _count("rejected by validation")
    scripts_run: int = _count("launcher scripts run")
    through_agent: int = _count("of them under jobcore-agent launch")
    refused_at_launch: int = _count("of them refusing their environment")
    real_mpirun_runs: int = _count("by the real Open MPI mpirun")
    remote_commands: int = _count("remote commands run by sh")
    """Commands the launchers handed to the stub ssh or agent, run by `sh -c`."""
    executed: int = _count("payloads executed")

    def __str__(self) -> str:
        pairs = f"{self.fields} fields x {self.payloads} payloads, a job each; " * bool(self.fields)
        counts = [c for c in dataclasses.fields(self) if "label" in c.metadata]
        return pairs + ", ".join(f"{c.metadata['label']}: {getattr(self, c.name)}" for c in counts)


@dataclasses.dataclass(frozen=True)
class Sandbox:
    """Folders of stubs (`bin`; `real-bin`, without mpirun's; `agent`, the agent's), files, and
    the canary program."""

    root: Path
    fired: Path
    """What the canary program creates."""
    canary: Path
    """The canary program, in `bin` and `real-bin`."""
    agent: Path
    """The folder standing for the pods' AGENT_DIR: the stub agent and its rsh names."""

    @classmethod
    def at(cls, root: Path) -> Sandbox:
        return cls(root, root / "fired", root / "bin" / "canary", root / "agent")

    def bin(self, *, real_mpirun: bool) -> Path:
        return self.root / ("real-bin" if real_mpirun else "bin")


@functools.cache
def real_agent() -> Path:
    """The agent as `scripts/agent.sh` builds it (cached by its sources' hash)."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "agent.sh"
    built = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True)
    return Path(built.stdout.strip().splitlines()[-1])


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
                if stub.is_file() and not (real and stub.name == "mpirun"):
                    shutil.copy(stub, folder / stub.name)
            # What a worker would start: Open MPI's daemon fails at once, so mpirun stops.
            (folder / "orted").write_text("#!/bin/sh\nexit 1\n")
            for name in ("hydra_pmi_proxy", "torchrun"):
                (folder / name).write_text("#!/bin/sh\n")
            (folder / "canary").write_text(f'#!/bin/sh\n: >>"{box.fired}"\n')
            for path in folder.iterdir():
                path.chmod(0o755)
        box.agent.mkdir()
        shutil.copy(STUBS / "agent" / "jobcore-agent", box.agent)
        shutil.copy(real_agent(), box.agent / "real-agent")  # `launch`'s checks are its own
        for name in ("jobcore-rsh", "ssh"):  # as `jobcore-agent install` links them
            (box.agent / name).symlink_to("jobcore-agent")
        (root / "empty").write_text("")
        # An address (RFC 5737's for examples): mpirun finds it is not this host's without DNS.
        (root / "hostfile").write_text("192.0.2.1 slots=2\n")
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
    job. A launcher that exists is rendered again, so no worker needs to be Ready. A kind whose
    launcher is a batch Job's pod (Kubeflow's) has it from the Job's template; a kind that names
    no launcher container runs its pod's first."""
    job, errors = parse_job(kind, case.doc)
    if job is None or errors:
        return None
    name = f"{job.name}-launcher"
    children = plan(kind, job, Observed({PODS: {name: {"metadata": {"name": name}}}}))
    child = next(c for c in children if c["metadata"]["name"] == name)
    pod = child["spec"]["template"] if child["kind"] == BATCH_JOBS.kind else child
    container = kind.containers.get("launcher")
    found: dict[str, Any] = next(
        c for c in pod["spec"]["containers"] if container in (None, c["name"])
    )
    sources = CanarySources(case.sources)
    env, _ = asyncio.run(environment(sources, pod, found, base={}, ip="10.0.0.2", host_ip=""))
    return Launcher(found, env)


@dataclasses.dataclass(frozen=True)
class Run:
    """What one launcher did: whether it refused its environment, and how many commands it
    handed to the stub ssh or agent."""

    refused: bool
    remote_commands: int
    through_agent: bool
    """Whether the container's command was `jobcore-agent launch`'s."""


_AGENT_DIR = re.compile(re.escape(AGENT_DIR) + r"(?![\w-])")
"""AGENT_DIR as the rendered commands and environment name it (not AGENT_KEY_DIR)."""


def run_launcher(launcher: Launcher, box: Sandbox, slot: int, *, real_mpirun: bool = False) -> Run:
    """The container's command under bash (or as it is), with its environment, the stubs first
    on PATH, the wait pointed at an empty hostfile and the pods' agent folder at the sandbox's;
    `slot` names its log of remote commands, so that launchers may run at once. Whether the
    canary fired is the caller's to see."""
    container = launcher.container
    argv = [*container["command"], *container.get("args", ())]
    through_agent = argv[:2] == [AGENT, "launch"]
    env = dict(launcher.env)
    for launcher_prefix in _LAUNCHERS:
        env |= {
            f"{launcher_prefix}_HOSTFILE": str(box.root / "empty"),
            f"{launcher_prefix}_WAIT_SECONDS": "1",
        }
    remote_log = box.root / f"remote-commands-{slot}"
    env |= {
        "PATH": f"{box.bin(real_mpirun=real_mpirun)}:/usr/bin:/bin",
        "HOME": str(box.root),
        "CANARY_WORKDIR": container.get("workingDir", "/"),
        "CANARY_REMOTE_LOG": str(remote_log),
    }
    argv = [_AGENT_DIR.sub(str(box.agent), a) for a in argv]
    env = {name: _AGENT_DIR.sub(str(box.agent), value) for name, value in env.items()}
    if real_mpirun:  # the ConfigMap's hostfile, here, and, over ssh, the stub ssh as the agent
        argv = [str(box.root / "hostfile") if a == HOSTFILE else a for a in argv]
        env |= {
            "OMPI_MCA_orte_default_hostfile": str(box.root / "hostfile"),
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            # Any lookup mpirun makes: a lost DNS answer would cost it glibc's 5 s timeout.
            "RES_OPTIONS": "timeout:1",
            # Its own session folder: mpiruns sharing one wait for each other.
            "TMPDIR": tempfile.mkdtemp(dir=box.root),
        }
        env.setdefault("OMPI_MCA_plm_rsh_agent", str(box.bin(real_mpirun=True) / "ssh"))
    remote_log.write_bytes(b"")
    run = subprocess.run(argv, env=env, cwd=box.root, capture_output=True, timeout=60, check=False)
    remote = remote_log.read_bytes()
    remote_log.unlink()
    if real_mpirun:
        shutil.rmtree(env["TMPDIR"], ignore_errors=True)
    refused = run.returncode == UNSAFE_ENV_EXIT and run.stderr.startswith(b"jobcore: not starting")
    return Run(refused, remote.count(b"\0"), through_agent)


def every_pair(canary: CanaryKind, box: Sandbox) -> list[Case]:
    """Each field set to each payload (after each of AROUND in turn), one job per pair, in the
    kind's variants in turn."""
    pairs = itertools.product(sorted(canary.fields), TEMPLATES)
    return [
        canary.job(
            canary.specs[i % len(canary.specs)],
            [(field, AROUND[i % len(AROUND)] + template.format(p=box.canary, f=box.fired))],
        )
        for i, (field, template) in enumerate(pairs)
    ]


def drawn(canary: CanaryKind, box: Sandbox, examples: int) -> list[Case]:
    """`examples` jobs with one to three fields set to `adversarial` strings, the same every
    run (hypothesis, derandomized)."""
    return fixed_draws(canary.jobs(adversarial(box)), examples)


PARALLEL = 4
"""Launchers run at once: each is a few short processes, mostly starting up."""


def check_kind(
    canary: CanaryKind,
    box: Sandbox,
    counts: Counts,
    *,
    examples: int,
    real_mpirun: bool = False,
) -> None:
    """`every_pair` (unless `real_mpirun`) and `examples` drawn jobs of one kind: each
    rejected, or its launcher run, PARALLEL at once, without the canary firing.

    Raises CanaryFired naming a job whose launcher, run again alone, ran a payload.
    """
    cases = drawn(canary, box, examples)
    if not real_mpirun:
        cases = every_pair(canary, box) + cases
        counts.fields, counts.payloads = len(canary.fields), len(TEMPLATES)
    launchers = []
    for case in cases:
        counts.tried += 1
        launcher = launcher_of(canary.kind, case)
        if launcher is None:
            counts.rejected += 1
        else:
            launchers.append((case, launcher))
    with ThreadPoolExecutor(PARALLEL) as pool:
        runs = list(
            pool.map(
                lambda slot: run_launcher(launchers[slot][1], box, slot, real_mpirun=real_mpirun),
                range(len(launchers)),
            )
        )
    if box.fired.exists():
        counts.executed += 1
        raise _culprit(launchers, box, real_mpirun=real_mpirun)
    for run in runs:
        counts.scripts_run += 1
        counts.through_agent += run.through_agent
        counts.refused_at_launch += run.refused
        counts.real_mpirun_runs += real_mpirun and not run.refused
        counts.remote_commands += run.remote_commands


def _culprit(
    launchers: list[tuple[Case, Launcher]], box: Sandbox, *, real_mpirun: bool
) -> CanaryFired:
    """Which of `launchers`, run again one at a time, fires the canary."""
    for case, launcher in launchers:
        box.fired.unlink(missing_ok=True)
        run_launcher(launcher, box, 0, real_mpirun=real_mpirun)
        if box.fired.exists():
            box.fired.unlink()
            return CanaryFired(f"the canary ran: fields {case.changes!r}\nlauncher {launcher!r}")
    return CanaryFired("the canary ran, but no launcher fires it alone")


EXAMPLES = {"MPIJob": 250, "HorovodJob": 200, "ColossalAIJob": 150, "Kubeflow MPIJob": 150}
"""Drawn jobs per kind and transport, beside `every_pair` (which 1,000 drawn MPIJobs alone
covered two thirds of); about a third of them pass validation, and run."""
REAL_MPIRUN_EXAMPLES = 125
"""Per transport."""
TRANSPORTS = {"ssh": KINDS, "agent": AGENT_KINDS}
"""The kinds over each transport."""


def check_all() -> dict[str, Counts]:
    """Every kind over each transport, then MPIJob's Open MPI jobs with the real mpirun (if
    installed) over each: counts by kind and transport."""
    results: dict[str, Counts] = {}
    with sandbox() as box:
        for transport, kinds in TRANSPORTS.items():
            for name, canary in kinds.items():
                counts = results[f"{name} over {transport}"] = Counts()
                check_kind(canary, box, counts, examples=EXAMPLES[name])
        if REAL_MPIRUN.exists():
            for transport, kinds in TRANSPORTS.items():
                counts = results[f"MPIJob, real mpirun, over {transport}"] = Counts()
                real = open_mpi_only(kinds["MPIJob"])
                check_kind(real, box, counts, examples=REAL_MPIRUN_EXAMPLES, real_mpirun=True)
    return results


def main() -> int:
    try:
        results = check_all()
    except CanaryFired as fired:
        print(fired, file=sys.stderr)
        return 1
    total = Counts()
    for name, counts in results.items():
        print(f"{name}: {counts}")
        for count in dataclasses.fields(Counts):
            setattr(total, count.name, getattr(total, count.name) + getattr(counts, count.name))
    print(f"In all: {dataclasses.replace(total, fields=0)}")
    return 1 if any(counts.executed for counts in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
