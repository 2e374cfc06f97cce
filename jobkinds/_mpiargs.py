"""Open MPI's extra arguments that would act in the shell starting its daemons, and reading a
flag's values from an MPI command line (`-N 3`, `--npernode=3`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from jobcore.launcher import PATH_CHARACTERS
from jobcore.launcher import SAFE_PATH
from jobkinds import _checks

_MCA_FLAG = re.compile(r"--?[a-z]*mca")
"""Open MPI's flags followed by an MCA parameter's name and value: -mca, --gmca, --prtemca..."""
_MCA_VALUE_FLAGS = ("-am", "--am", "-tune", "--tune", "-launch-agent", "--launch-agent")
"""Open MPI flags whose value mpirun copies onto its daemons' command line: parameter files
become MCA values, and the launch agent starts that command line."""
_PREFIX_FLAGS = ("-prefix", "--prefix")


def remote_shell_errors(args: Sequence[str]) -> list[str]:
    """What in Open MPI's extra args would act in the shell that starts its daemons.

    mpirun (ORTE and PRRTE alike) writes `--prefix` unquoted into that command, and each MCA
    parameter as `-mca name "value"`, a launch agent unquoted: all must hold characters no
    shell acts on (`SAFE_PATH`, `_checks.MCA_NAME`, `_checks.MCA_VALUE`).
    """
    errors = [
        f"{flag} needs an absolute path of {PATH_CHARACTERS} only (Open MPI writes it "
        f"into the workers' shell command), got {value!r}"
        for flag, value in flag_values(args, _PREFIX_FLAGS)
        if value is None or not SAFE_PATH.fullmatch(value)
    ]
    for flag, value in flag_values(args, _MCA_VALUE_FLAGS):
        if problem := _checks.mca_value_error(value or ""):
            errors.append(f"{flag} {problem}")
    for i, arg in enumerate(args):
        if not _MCA_FLAG.fullmatch(arg):
            continue
        name, value = [*args[i + 1 : i + 3], "", ""][:2]
        if not _checks.MCA_NAME.fullmatch(name):
            errors.append(
                f"{arg} needs an MCA parameter name ([A-Za-z0-9_]+; Open MPI writes it unquoted "
                f"into the workers' shell command), got {name!r}"
            )
        elif problem := _checks.mca_value_error(value):
            errors.append(f"{arg} {name}: the value {problem}")
    return errors


def flag_values(args: Sequence[str], flags: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each occurrence of one of `flags` with its value (`-N 3` or `--npernode=3`)."""
    found: list[tuple[str, str | None]] = []
    for i, arg in enumerate(args):
        name, eq, inline = arg.partition("=")
        if name in flags and eq:
            found.append((name, inline))
        elif arg in flags:
            found.append((arg, args[i + 1] if i + 1 < len(args) else None))
    return found
