"""`jobcore describe KIND/NAME` and `jobcore logs KIND/NAME`: a job on one screen, and its
launcher's (or a worker's) log, for users who live in a shell.

Both read once from the API server with the user's kubeconfig (the job, its pods by jobcore's
labels, the namespace's Events) and say what the dashboard's job page says, from the same
`summary` and `details`. Text from the cluster is other people's: `describe` prints it with
control characters shown as escapes, so a message cannot move the cursor or recolour the
terminal. `logs` prints the program's output as it is, as `kubectl logs` does.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from typing import Any

from controllers.apiclient import add_client_arguments
from controllers.apiclient import client_from
from controllers.dashboard.details import JobDetails
from controllers.dashboard.details import job_details
from controllers.dashboard.logs import log_container
from controllers.dashboard.logs import log_pod
from controllers.dashboard.summary import age
from controllers.dashboard.view import event_time
from controllers.kinds import InstalledKind
from controllers.kinds import find_kind
from controllers.kinds import installed_kinds
from jobcore import EVENTS
from jobcore import PODS
from jobcore import ApiError
from jobcore import Client
from jobcore import NotFoundError
from jobcore import Object
from jobcore.jobs import JOB_KIND_LABEL
from jobcore.jobs import JOB_NAME_LABEL

DEFAULT_NAMESPACE = "default"
LOG_LINES = 20
"""How many of the log's last lines `describe` shows."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: Any) -> str:
    """`text` with control characters (escape sequences among them) written as `\\x1b`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def add_parsers(commands: Any) -> None:
    """The `describe` and `logs` subcommands of the CLI's `commands` (argparse's subparsers)."""
    describe = commands.add_parser("describe", help="a job's status, pods, events and log tail")
    logs = commands.add_parser("logs", help="a job's launcher log, or a worker's")
    for parser in (describe, logs):
        parser.add_argument("job", metavar="KIND/NAME", help="e.g. mpijob/train")
        parser.add_argument("--namespace", "-n", default=DEFAULT_NAMESPACE)
        add_client_arguments(parser)
    logs.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    logs.add_argument(
        "--replica",
        help="whose log: worker-1, launcher... (default: the launcher, else the first pod)",
    )
    logs.add_argument("--tail", type=int, help="the last lines only")


def _job_name(text: str) -> tuple[InstalledKind, str]:
    kind, slash, name = text.partition("/")
    if not slash or not kind or not name:
        raise ValueError(f"{text!r}: say KIND/NAME, e.g. mpijob/train")
    return find_kind(kind, installed_kinds()), name


async def _read(
    client: Client, installed: InstalledKind, namespace: str, name: str
) -> tuple[Object, list[Object]]:
    resource = installed.kind.resource
    obj = await client.get(resource, name, namespace)
    selector = f"{JOB_NAME_LABEL}={name},{JOB_KIND_LABEL}={resource.kind}"
    pods = (await client.list(PODS, namespace, label_selector=selector))["items"]
    return obj, pods


async def _events(client: Client, namespace: str, about: set[str]) -> list[Object]:
    items = (await client.list(EVENTS, namespace))["items"]
    return [e for e in items if (e.get("involvedObject") or {}).get("name") in about]


def _table(rows: Iterable[Iterable[Any]], header: Iterable[str]) -> list[str]:
    cells = [list(header), *([printable(cell) for cell in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]


def describe_text(installed: InstalledKind, details: JobDetails, log: str | None) -> str:
    """The screen `jobcore describe` prints."""
    s = details.summary
    lines = [
        f"{s.kind} {s.namespace}/{s.name} ({installed.name})",
        f"Phase: {s.phase}   Age: {age(s.created)}   Ready: {s.ready}   Restarts: {s.restarts}"
        + (f"   {retry}" if (retry := s.retrying(details.now)) else ""),
        f"Message: {printable(s.message)}",
    ]
    if (f := details.failure) is not None:
        where = f"pod {f.pod} ({f.replica})" if f.pod else "the job"
        code = f", exit code {f.exit_code}" if f.exit_code is not None else ""
        lines += ["", f"What failed: {printable(where)}{code}: {printable(f.message)}"]
    lines += ["", "Conditions:"]
    lines += _table(
        (
            (c.last_transition_time or "", c.type, c.status, c.reason or "", c.message or "")
            for c in details.timeline
        ),
        ("CHANGED", "TYPE", "STATUS", "REASON", "MESSAGE"),
    )
    lines += ["", "Pods:"]
    lines += _table(
        (
            (
                p.name,
                p.replica,
                p.node,
                p.phase,
                "yes" if p.ready else "no",
                p.restarts,
                p.exit_codes,
                p.reason,
            )
            for p in details.pods
        ),
        ("NAME", "RANK", "NODE", "PHASE", "READY", "RESTARTS", "EXIT CODES", "REASON"),
    )
    lines += ["", "Events:"]
    lines += _table(
        (
            (
                event_time(e),
                e.get("type") or "",
                e.get("reason") or "",
                (e.get("involvedObject") or {}).get("name", ""),
                e.get("message") or "",
            )
            for e in details.events
        ),
        ("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"),
    )
    if log is not None:
        lines += [
            "",
            f"Log (last {LOG_LINES} lines):",
            *("  " + printable(line) for line in log.splitlines()),
        ]
    return "\n".join(lines) + "\n"


async def describe(args: argparse.Namespace) -> int:
    try:
        installed, name = _job_name(args.job)
        async with await client_from(args) as client:
            obj, pods = await _read(client, installed, args.namespace, name)
            about = {name, *(p["metadata"]["name"] for p in pods)}
            events = await _events(client, args.namespace, about)
            log = await _log_tail(client, installed, pods)
    except NotFoundError:
        print(
            f"jobcore describe: {args.job} not found in namespace {args.namespace}", file=sys.stderr
        )
        return 1
    except (ValueError, ApiError) as error:
        print(f"jobcore describe: {error}", file=sys.stderr)
        return 1
    details = job_details(installed.kind, obj, pods, events)
    sys.stdout.write(describe_text(installed, details, log))
    return 0


async def _log_tail(client: Client, installed: InstalledKind, pods: list[Object]) -> str | None:
    pod = log_pod(pods)
    if pod is None:
        return None
    meta = pod["metadata"]
    try:
        return await client.pod_log(
            meta["name"],
            meta["namespace"],
            container=log_container(installed.kind, pod),
            tail_lines=LOG_LINES,
        )
    except NotFoundError:
        return None
    except ApiError as error:
        return f"(no log: {error})"


async def logs(args: argparse.Namespace) -> int:
    try:
        installed, name = _job_name(args.job)
        async with await client_from(args) as client:
            _, pods = await _read(client, installed, args.namespace, name)
            pod = log_pod(pods, args.replica)
            if pod is None:
                wanted = args.replica or "any"
                raise ValueError(f"{args.job} has no pod of replica {wanted} in {args.namespace}")
            meta, container = pod["metadata"], log_container(installed.kind, pod)
            if args.follow:
                async for line in client.follow_pod_log(
                    meta["name"], args.namespace, container=container, tail_lines=args.tail
                ):
                    print(line, flush=True)
            else:
                sys.stdout.write(
                    await client.pod_log(
                        meta["name"], args.namespace, container=container, tail_lines=args.tail
                    )
                )
    except NotFoundError:
        print(f"jobcore logs: {args.job} not found in namespace {args.namespace}", file=sys.stderr)
        return 1
    except (ValueError, ApiError) as error:
        print(f"jobcore logs: {error}", file=sys.stderr)
        return 1
    return 0
