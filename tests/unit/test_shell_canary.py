"""No user string reaches a shell: adversarial jobs of every kind, their real launcher scripts
run under bash with stubs modelling each launcher's remote shell (tests/shell_canary.py), and
MPIJobs run by the real Open MPI 4 mpirun. Strings arrive in the spec or, unseen by validation,
through `valueFrom` and `envFrom`. A canary program that any payload would run never runs.
`python -m tests.shell_canary` prints the counts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobcore.testing import require
from tests import shell_canary
from tests.shell_canary import Counts
from tests.shell_canary import Sandbox
from tests.shell_canary_jobs import KINDS
from tests.shell_canary_jobs import OPEN_MPI_MPIJOB


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    with shell_canary.sandbox() as sandbox:
        yield sandbox


@pytest.mark.parametrize("kind", list(KINDS))
def test_no_field_runs_in_a_launcher_or_worker_shell(kind: str, box: Sandbox) -> None:
    counts = Counts()
    examples = shell_canary.EXAMPLES[kind]
    shell_canary.check_kind(KINDS[kind], box, counts, examples=examples)
    print(counts)
    assert counts.executed == 0
    assert counts.tried == examples
    assert counts.rejected > 0 and counts.scripts_run > 0
    # Open MPI launchers refuse what validation could not see; ColossalAI's runs no Open MPI.
    assert (counts.refused_at_launch > 0) == (kind != "ColossalAIJob"), counts
    # Not vacuous: the other launches got as far as the workers' shell.
    started = counts.scripts_run - counts.refused_at_launch
    assert counts.remote_commands >= 0.9 * started, counts


def test_real_open_mpi_runs_no_field_in_its_daemons_shell(box: Sandbox) -> None:
    require(None if shell_canary.REAL_MPIRUN.exists() else "no Open MPI 4 at /usr/bin/mpirun")
    counts = Counts()
    examples = shell_canary.REAL_MPIRUN_EXAMPLES
    shell_canary.check_kind(OPEN_MPI_MPIJOB, box, counts, examples=examples, real_mpirun=True)
    print(counts)
    assert counts.executed == 0
    assert counts.real_mpirun_runs > 0 and counts.remote_commands > 0, counts
