"""Open MPI: its environment, and what it copies into the shell command that starts its daemons.

Open MPI writes MCA parameters (from `-mca` flags and `OMPI_MCA_`-style variables) and its
prefix variables into the command its daemons' shell runs on each worker. `open_mpi_env_errors`
checks what validation can see; `open_mpi_env_script`, by the same rules, what an Open MPI
launcher finds at run time (values from `valueFrom`, variables from `envFrom` or the image);
`remote_shell_errors`, what in mpirun's own arguments would act in that shell. Shared by both
MPIJobs and HorovodJob's `mpi` backend, with `open_mpi_env`, Open MPI's hostfile, slots and
remote shell (`open_mpi_shell_env`: ssh's options or the agent).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from jobcore.jobs import FieldError
from jobcore.launcher import SAFE_PATH
from jobcore.launcher import path_errors
from jobkinds.mpi.flavours import OPEN_MPI
from jobkinds.mpi.flavours import agent_shell_env
from jobkinds.mpi.flavours import flag_values

# Character classes, the same in a Python regex and a bash pattern (`[!...]`, under LC_ALL=C).
_MCA_NAME_CLASS = "A-Za-z0-9_"
_MCA_VALUE_CLASS = "A-Za-z0-9 ._+@%=:,/^-"
PATH_CLASS = "A-Za-z0-9._+@=:,/-"
"""The characters of a prefix path: those of `jobcore.launcher.SAFE_PATH`, which validation's
`path_errors` checks, so the launcher's check at run time applies the same rule."""
PATH_CHARACTERS = "letters, digits and . _ + @ = : , / -"
"""PATH_CLASS in words, as `path_errors` says it."""
MCA_NAME = re.compile(f"[{_MCA_NAME_CLASS}]+")
MCA_VALUE = re.compile(f"[{_MCA_VALUE_CLASS}]*")
"""An MCA value Open MPI can put on its daemons' command line: no character acts in a shell,
inside the double quotes Open MPI adds or, for a launch agent, outside them."""
MCA_VALUE_CHARACTERS = "letters, digits, spaces and . _ + @ % = : , / ^ -"
MCA_ENV_PREFIXES = ("OMPI_MCA_", "PRTE_MCA_", "PMIX_MCA_")
"""Environment variables Open MPI 4 or 5 reads as MCA parameters and copies, as `-mca name
"value"`, onto the command line that starts its daemons on the workers over ssh."""
PREFIX_ENV_NAMES = ("OPAL_PREFIX", "PMIX_PREFIX")
"""Environment variables that Open MPI 4 (ORTE: OPAL_PREFIX) and 5 (PRRTE: PMIX_PREFIX) write
unquoted, as `NAME=value ; export NAME`, into that command line whenever it has a prefix."""
_MCA_FLAG = re.compile(r"--?[a-z]*mca")
"""Open MPI's flags followed by an MCA parameter's name and value: -mca, --gmca, --prtemca..."""
_MCA_VALUE_FLAGS = ("-am", "--am", "-tune", "--tune", "-launch-agent", "--launch-agent")
"""Open MPI flags whose value mpirun copies onto its daemons' command line: parameter files
become MCA values, and the launch agent starts that command line."""
_PREFIX_FLAGS = ("-prefix", "--prefix")
UNSAFE_ENV_EXIT = 65
"""The exit code of an Open MPI launcher that refuses its environment (sysexits' EX_DATAERR)."""


def mca_value_error(value: str) -> str | None:
    """Why Open MPI must not carry `value` (an MCA value) to its daemons' shell, if it must not."""
    if MCA_VALUE.fullmatch(value):
        return None
    return (
        f"must be {MCA_VALUE_CHARACTERS} only: Open MPI copies it into the command the "
        f"workers' shell runs, got {value!r}"
    )


def open_mpi_env_errors(env: Iterable[Mapping[str, Any]], path: str) -> list[FieldError]:
    """The MCA parameters among the env list at `path` (see MCA_ENV_PREFIXES): a name of
    MCA_NAME's characters after the prefix, and a value `mca_value_error` accepts; and
    PREFIX_ENV_NAMES, paths.

    Only a literal `value` can be checked here; the launcher checks the others when it starts
    (`open_mpi_env_script`).
    """
    errors = []
    for i, entry in enumerate(env):
        name = str(entry.get("name", ""))
        if name in PREFIX_ENV_NAMES:
            errors += path_errors({f"{path}[{i}].value": entry.get("value")})
        prefix = next((p for p in MCA_ENV_PREFIXES if name.startswith(p)), None)
        if prefix is None:
            continue
        if not MCA_NAME.fullmatch(name.removeprefix(prefix)):
            errors.append(
                FieldError(
                    f"{path}[{i}].name",
                    f"is not {prefix} and an MCA parameter name ([A-Za-z0-9_]+): Open MPI "
                    f"copies it into the command the workers' shell runs, got {name!r}",
                )
            )
        value = entry.get("value")
        if isinstance(value, str) and (problem := mca_value_error(value)):
            errors.append(FieldError(f"{path}[{i}].value", problem))
    return errors


def open_mpi_env_script(launcher: str) -> str:
    """bash that exits UNSAFE_ENV_EXIT, naming them, when variables Open MPI would copy into
    its daemons' shell command break `open_mpi_env_errors`' rules (a prefix variable need not
    be absolute here): the same rules, applied when the launcher starts to what `valueFrom`,
    `envFrom` and the image brought, which validation cannot see.

    It reads the environment as the process received it, names that are no shell variable
    included; `launcher` names the program it would start, for the message.
    """
    before, after = _refusal(launcher)
    bad_name, bad_value, bad_path = (
        shlex.quote(f"*[!{c}]*") for c in (_MCA_NAME_CLASS, _MCA_VALUE_CLASS, PATH_CLASS)
    )
    mca = " | ".join(f"{prefix}*" for prefix in MCA_ENV_PREFIXES)
    return f"""unsafe=$(
  LC_ALL=C # byte ranges, whatever the image's locale
  bad_name={bad_name} bad_value={bad_value} bad_path={bad_path}
  while IFS= read -r -d '' entry; do
    name=${{entry%%=*}} value=${{entry#*=}}
    case $name in
      {mca})
        rest=${{name#*_MCA_}}
        [[ -n $rest && $rest != $bad_name && $value != $bad_value ]] ;;
      {" | ".join(PREFIX_ENV_NAMES)}) [[ $value != $bad_path ]] ;;
    esac || printf ' %q' "$name"
  done </proc/self/environ
)
if [[ -n $unsafe ]]; then
  echo {shlex.quote(before)}"$unsafe"{shlex.quote(after)} >&2
  exit {UNSAFE_ENV_EXIT}
fi
"""


def open_mpi_env_check(launcher: str) -> str:
    """`open_mpi_env_script`'s rules and message as `jobcore-agent launch --env-check`'s
    JSON: the same check, made by the agent, so that the launcher needs no bash."""
    mca = "|".join(MCA_ENV_PREFIXES)
    before, after = _refusal(launcher)
    rules = [
        {
            "select": mca,
            "name": f"(?:{mca})[{_MCA_NAME_CLASS}]+",
            "value": f"[{_MCA_VALUE_CLASS}]*",
        },
        {
            "select": f"(?:{'|'.join(PREFIX_ENV_NAMES)})$",
            "name": ".*",
            "value": f"[{PATH_CLASS}]*",
        },
    ]
    check = {"rules": rules, "before": before, "after": after, "exit": UNSAFE_ENV_EXIT}
    return json.dumps(check, separators=(",", ":"))


def _refusal(launcher: str) -> tuple[str, str]:
    """What is said before and after the unsafe variables' names when `launcher` is not
    started. The names come first: a job's ReplicaFailure shows the line's first 200
    characters."""
    before = f"jobcore: not starting {launcher}: unsafe for the workers' shell:"
    after = (
        " (Open MPI writes these variables, from the container's env, envFrom or image, into "
        "the command the workers' shell runs; an MCA name may hold letters, digits and _, an "
        f"MCA value {MCA_VALUE_CHARACTERS}, {' and '.join(PREFIX_ENV_NAMES)} {PATH_CHARACTERS})"
    )
    return before, after


def remote_shell_errors(args: Sequence[str]) -> list[str]:
    """What in Open MPI's extra args would act in the shell that starts its daemons.

    mpirun (ORTE and PRRTE alike) writes `--prefix` unquoted into that command, and each MCA
    parameter as `-mca name "value"`, a launch agent unquoted: all must hold characters no
    shell acts on (`SAFE_PATH`, `MCA_NAME`, `MCA_VALUE`).
    """
    errors = [
        f"{flag} needs an absolute path of {PATH_CHARACTERS} only (Open MPI writes it "
        f"into the workers' shell command), got {value!r}"
        for flag, value in flag_values(args, _PREFIX_FLAGS)
        if value is None or not SAFE_PATH.fullmatch(value)
    ]
    for flag, value in flag_values(args, _MCA_VALUE_FLAGS):
        if problem := mca_value_error(value or ""):
            errors.append(f"{flag} {problem}")
    for i, arg in enumerate(args):
        if not _MCA_FLAG.fullmatch(arg):
            continue
        name, value = [*args[i + 1 : i + 3], "", ""][:2]
        if not MCA_NAME.fullmatch(name):
            errors.append(
                f"{arg} needs an MCA parameter name ([A-Za-z0-9_]+; Open MPI writes it unquoted "
                f"into the workers' shell command), got {name!r}"
            )
        elif problem := mca_value_error(value):
            errors.append(f"{arg} {name}: the value {problem}")
    return errors


def open_mpi_env(
    *, hostfile: str, slots_per_host: int, ssh_args: str = "", agent: bool = False
) -> dict[str, str]:
    """Open MPI's hostfile, slots per host and remote shell (`open_mpi_shell_env`), under the
    names of Open MPI 4 (ORTE) and of Open MPI 5 (PRRTE): each ignores the other's."""
    return {
        "OMPI_MCA_orte_default_hostfile": hostfile,
        "OMPI_MCA_orte_set_default_slots": str(slots_per_host),
        "PRTE_MCA_prte_default_hostfile": hostfile,
        "PRTE_MCA_prte_set_default_slots": str(slots_per_host),
    } | open_mpi_shell_env(ssh_args=ssh_args, agent=agent)


def open_mpi_shell_env(*, ssh_args: str = "", agent: bool = False) -> dict[str, str]:
    """How Open MPI 4 and 5 reach the workers: ssh with `ssh_args`, or with `agent` jobcore's
    agent in ssh's place (`agent_shell_env`); either way keeping the hosts' full names.

    Without `keep_fqdn_hostnames` both cut `w-0.job.ns.svc.cluster.local` to `w-0`, which does
    not resolve.
    """
    values = {
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "PRTE_MCA_prte_keep_fqdn_hostnames": "true",
    }
    if agent:
        return values | agent_shell_env(OPEN_MPI)
    return values | {"OMPI_MCA_plm_rsh_args": ssh_args, "PRTE_MCA_plm_ssh_args": ssh_args}
