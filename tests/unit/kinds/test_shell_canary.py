"""No user string reaches a shell: adversarial jobs of every kind, over ssh and through jobcore's
agent, their real launcher scripts run under bash with stubs modelling each launcher's remote
shell (tests/support/shell_canary.py), and MPIJobs run by the real Open MPI 4 mpirun. Strings
arrive in the spec or, unseen by validation, through `valueFrom` and `envFrom`. A canary program
that any payload would run never runs. `python -m tests.support.shell_canary` prints the counts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from jobcore.launcher import AGENT
from jobcore.testing import require
from jobkinds.mpijob import children
from tests.support import shell_canary
from tests.support.shell_canary import CanaryFired
from tests.support.shell_canary import Counts
from tests.support.shell_canary import Sandbox
from tests.support.shell_canary_jobs import open_mpi_only

KINDS = [
    (name, transport) for transport, kinds in shell_canary.TRANSPORTS.items() for name in kinds
]
OPEN_MPI = {"MPIJob", "HorovodJob"}
"""The kinds whose launchers check the environment Open MPI copies to the workers' shell."""


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    with shell_canary.sandbox() as sandbox:
        yield sandbox


@pytest.mark.parametrize(("kind", "transport"), KINDS)
def test_no_field_runs_in_a_launcher_or_worker_shell(
    kind: str, transport: str, box: Sandbox
) -> None:
    counts = Counts()
    canary = shell_canary.TRANSPORTS[transport][kind]
    examples = shell_canary.EXAMPLES[kind]
    shell_canary.check_kind(canary, box, counts, examples=examples)
    print(counts)
    assert counts.executed == 0
    pairs = len(canary.fields) * len(shell_canary.TEMPLATES)
    assert counts.tried == pairs + examples
    # Kubeflow's pod templates are Kubernetes', which the API server checks, not the kind.
    assert (counts.rejected > 0) == (kind != "Kubeflow MPIJob") and counts.scripts_run > 0
    assert counts.through_agent == (counts.scripts_run if transport == "agent" else 0), counts
    # Open MPI launchers refuse what validation could not see; the others run no check.
    assert (counts.refused_at_launch > 0) == (kind in OPEN_MPI), counts
    # Not vacuous: the other launches got as far as the workers' shell.
    started = counts.scripts_run - counts.refused_at_launch
    assert counts.remote_commands >= 0.9 * started, counts


@pytest.mark.parametrize("transport", list(shell_canary.TRANSPORTS))
def test_real_open_mpi_runs_no_field_in_its_daemons_shell(transport: str, box: Sandbox) -> None:
    require(None if shell_canary.REAL_MPIRUN.exists() else "no Open MPI 4 at /usr/bin/mpirun")
    counts = Counts()
    canary = open_mpi_only(shell_canary.TRANSPORTS[transport]["MPIJob"])
    examples = shell_canary.REAL_MPIRUN_EXAMPLES
    shell_canary.check_kind(canary, box, counts, examples=examples, real_mpirun=True)
    print(counts)
    assert counts.executed == 0
    assert counts.real_mpirun_runs > 0 and counts.remote_commands > 0, counts
    assert counts.through_agent == (counts.scripts_run if transport == "agent" else 0), counts


def test_a_launch_command_rendered_as_shell_text_through_the_agent_is_caught(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not vacuous through the agent: an MPIJob whose launcher hands `jobcore-agent launch` its
    mpirun command joined into `sh -c` text (a rendering mistake) runs a payload, and the
    canary names the field that did."""

    def joined(launcher: list[str], mpi: object, transport: str = "ssh") -> list[str]:
        return [AGENT, "launch", "--", "/bin/sh", "-c", " ".join(launcher)]

    monkeypatch.setattr(children, "launcher_command", joined)
    counts = Counts()
    agent = shell_canary.TRANSPORTS["agent"]["MPIJob"]
    mpijob = dataclasses.replace(agent, fields={"cmd": agent.fields["cmd"]})
    with pytest.raises(CanaryFired, match=r"the canary ran: fields \[\('"):
        shell_canary.check_kind(mpijob, box, counts, examples=1)
    assert counts.executed == 1
