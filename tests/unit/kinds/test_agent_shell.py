"""The agent as each MPI implementation's remote shell: the settings every kind's launcher gets
(`agent_shell_env`), the names each MPI reads, in one table."""

from __future__ import annotations

import pytest

from jobcore.launcher import AGENT
from jobcore.launcher import AGENT_RSH
from jobkinds.mpi.flavours import Implementation
from jobkinds.mpi.flavours import agent_shell_env
from jobkinds.mpi.flavours import flavour

RSH = f"{AGENT} rsh"


@pytest.mark.parametrize(
    ("mpi", "expected"),
    [
        ("OpenMPI", {"OMPI_MCA_plm_rsh_agent": RSH, "PRTE_MCA_plm_ssh_agent": RSH}),
        ("MPICH", {"HYDRA_LAUNCHER": "ssh", "HYDRA_LAUNCHER_EXEC": AGENT_RSH}),
        ("IntelMPI", {"I_MPI_HYDRA_BOOTSTRAP": "ssh", "I_MPI_HYDRA_BOOTSTRAP_EXEC": AGENT_RSH}),
        ("Intel", {"I_MPI_HYDRA_BOOTSTRAP": "ssh", "I_MPI_HYDRA_BOOTSTRAP_EXEC": AGENT_RSH}),
    ],
)
def test_each_mpi_starts_its_daemons_through_the_agent_under_the_names_it_reads(
    mpi: Implementation, expected: dict[str, str]
) -> None:
    """Open MPI 4 and 5 run a command (`jobcore-agent rsh`); Hydra's launcher exec and
    bootstrap exec take one program path, the agent under its rsh name."""
    assert agent_shell_env(flavour(mpi)) == expected
