"""The fields of each kind that reach a launcher's or a worker's command line, and valid jobs
to put values into: what tests/support/shell_canary.py fills with adversarial strings.

Each kind comes in its variants (MPIJob's Open MPI and MPICH; HorovodJob's gloo, mpi and
elastic); a field is a name and a function that puts a value where it goes, made absolute for
a path (so a check that only wants a leading `/` would let the rest through). A value may also
arrive as the kubelet would bring it, unseen by validation: from a ConfigMap or Secret
(`valueFrom`, `envFrom` and its `prefix`) or from the pod's annotations (`fieldRef`); the job's
`Draft` holds those objects' data beside its spec. Every kind with an agent transport comes
again with it (`over_agent`): T9k kinds' `spec.transport: agent`, Kubeflow's MPIJob's
`jobcore.dev/transport: agent` annotation.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from jobcore import Object
from jobcore.jobs import JobKind
from jobkinds.colossalaijob import ColossalAIJobKind
from jobkinds.horovodjob import HorovodJobKind
from jobkinds.kubeflow import KubeflowMPIJobKind
from jobkinds.kubeflow.transport import TRANSPORT_ANNOTATION
from jobkinds.mpijob import MPIJobKind
from tests.support.jobdocs import FieldPath
from tests.support.jobdocs import at

Changes = list[tuple[str, str]]


@dataclasses.dataclass
class Draft:
    """A job's spec being written, and the ConfigMaps and Secrets (name: data) it refers to."""

    spec: dict[str, Any]
    sources: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)

    def source(self, data: dict[str, str]) -> str:
        """A new ConfigMap or Secret holding `data`: its name."""
        name = f"canary-{len(self.sources)}"
        self.sources[name] = data
        return name


@dataclasses.dataclass(frozen=True)
class Case:
    """A job document, the data its env refers to, and which fields were set to what."""

    doc: Object
    sources: dict[str, dict[str, str]]
    changes: Changes


Setter = Callable[[Draft, str], None]
"""Puts a value into a draft (changed in place)."""


def _put(*path: str | int) -> Setter:
    def put(draft: Draft, value: str) -> None:
        at(draft.spec, path[:-1])[path[-1]] = value

    return put


def _absolute(value: str) -> str:
    """For a path field: the value made absolute, as a path that passes a naive check is."""
    return value if value.startswith("/") else "/" + value


def _put_path(*path: str | int) -> Setter:
    def put(draft: Draft, value: str) -> None:
        at(draft.spec, path[:-1])[path[-1]] = _absolute(value)

    return put


def _add(*path: str | int, entries: Callable[[str], list[Any]] = lambda v: [v]) -> Setter:
    def add(draft: Draft, value: str) -> None:
        at(draft.spec, path).extend(entries(value))

    return add


def _mpi_args(*before: str, after: str | None = None) -> Setter:
    """The value into extraMPIArgs, after `before` (a flag and maybe an MCA name)."""
    return _add(
        "worker", "extraMPIArgs", entries=lambda v: [*before, v, *([after] if after else [])]
    )


def _named(name: str) -> str:
    """`name` without the `=` the API server refuses in an env name or prefix."""
    return name.replace("=", "") or "_"


def _named_entry(name: str) -> list[dict[str, str]]:
    """An env entry named `name` (see `_named`)."""
    return [{"name": _named(name), "value": "1"}]


def _value_from(container: FieldPath, name: str | None, ref: str) -> Setter:
    """An env entry whose value comes from a `ref` (configMapKeyRef, secretKeyRef, or a
    fieldRef to an annotation of the template); named `name`, or by the value itself."""

    def add(draft: Draft, value: str) -> None:
        if ref == "fieldRef":
            metadata = draft.spec["worker"]["template"].setdefault("metadata", {})
            metadata.setdefault("annotations", {})["canary"] = value
            source: dict[str, Any] = {"fieldPath": "metadata.annotations['canary']"}
        else:
            source = {"name": draft.source({"key": value if name else "1"}), "key": "key"}
        entry = {"name": name or _named(value), "valueFrom": {ref: source}}
        at(draft.spec, container).setdefault("env", []).append(entry)

    return add


def _env_from(
    container: FieldPath, ref: str, *, key: str | None = None, prefix: str | None = None
) -> Setter:
    """An envFrom source: `key` set to the value, or the value (after `prefix`) as its prefix."""

    def add(draft: Draft, value: str) -> None:
        data = {key: value} if key else {"canary": "1"}
        source: dict[str, Any] = {ref: {"name": draft.source(data)}}
        if not key:
            source["prefix"] = _named((prefix or "") + value)
        at(draft.spec, container).setdefault("envFrom", []).append(source)

    return add


def _env(container: FieldPath) -> dict[str, Setter]:
    """The env of the container the launcher is made from: a name, literal values, values
    from a ConfigMap, a Secret or an annotation, and what envFrom brings."""
    return {
        "env name": _add(*container, "env", entries=_named_entry),
        "env value": _add(*container, "env", entries=lambda v: [{"name": "CANARY", "value": v}]),
        "env OMPI_MCA_ value": _add(
            *container, "env", entries=lambda v: [{"name": "OMPI_MCA_canary", "value": v}]
        ),
        "valueFrom ConfigMap OMPI_MCA_": _value_from(
            container, "OMPI_MCA_canary", "configMapKeyRef"
        ),
        "valueFrom Secret launch agent": _value_from(
            container, "OMPI_MCA_orte_launch_agent", "secretKeyRef"
        ),
        "valueFrom annotation PRTE_MCA_ launch agent": _value_from(
            container, "PRTE_MCA_prte_launch_agent", "fieldRef"
        ),
        "valueFrom ConfigMap OPAL_PREFIX": _value_from(container, "OPAL_PREFIX", "configMapKeyRef"),
        "envFrom ConfigMap PMIX_MCA_": _env_from(container, "configMapRef", key="PMIX_MCA_canary"),
        "envFrom Secret launch agent": _env_from(
            container, "secretRef", key="OMPI_MCA_orte_launch_agent"
        ),
        "envFrom ConfigMap PMIX_PREFIX": _env_from(container, "configMapRef", key="PMIX_PREFIX"),
        "envFrom prefix": _env_from(container, "configMapRef"),
        "envFrom OMPI_MCA_ prefix": _env_from(container, "secretRef", prefix="OMPI_MCA_"),
    }


@dataclasses.dataclass(frozen=True)
class CanaryKind:
    kind: JobKind[Any]
    specs: tuple[dict[str, Any], ...]
    """Valid specs the fields are put into: the kind's variants (MPI, backend, elastic)."""
    fields: dict[str, Setter]
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    """The job's own annotations (Kubeflow's transport)."""

    def jobs(self, values: st.SearchStrategy[str]) -> st.SearchStrategy[Case]:
        """A job with one to three fields set to `values`."""
        changes = st.lists(
            st.tuples(st.sampled_from(sorted(self.fields)), values),
            min_size=1,
            max_size=3,
        )
        return st.builds(self.job, st.sampled_from(self.specs), changes)

    def job(self, spec: dict[str, Any], changes: Changes) -> Case:
        """The job made from `spec` with `changes` (field, value) made."""
        draft = Draft(copy.deepcopy(spec))
        for field, value in changes:
            self.fields[field](draft, value)
        metadata: dict[str, Any] = {"name": "canary", "namespace": "team", "uid": "0d1e2f3a"}
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        kind = self.kind.resource
        doc = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata}
        return Case({**doc, "spec": draft.spec}, draft.sources, changes)


def _container(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "img", "workingDir": "/work", "env": [], **fields}


_MPI_WORKER = ("worker", "template", "spec", "containers", 0)
MPIJOB = CanaryKind(
    MPIJobKind(),
    tuple(
        {
            "mpiImplementation": mpi,
            "mpiHome": "/opt/mpi",
            "ssh": {},
            "mca": {"btl": "^openib"} if mpi == "OpenMPI" else {},
            "worker": {
                "replicas": 2,
                "extraMPIArgs": ["-N", "2"],
                "cmd": ["./prog", "x"],
                "template": {"spec": {"containers": [_container("mpi-worker")]}},
            },
        }
        for mpi in ("OpenMPI", "MPICH")
    ),
    {
        "spec.mpiHome": _put_path("mpiHome"),
        "spec.ssh.sshdPath": _put_path("ssh", "sshdPath"),
        "spec.ssh.sshAuthMountPath": _put_path("ssh", "sshAuthMountPath"),
        "spec.mca value": _put("mca", "canary"),
        "spec.mca name": lambda draft, value: draft.spec["mca"].update({value: "1"}),
        "extraMPIArgs": _add("worker", "extraMPIArgs"),
        **{f"extraMPIArgs {flag}": _mpi_args(flag) for flag in ("-am", "--tune", "-x")},
        "extraMPIArgs --launch-agent": _mpi_args("--launch-agent"),
        "extraMPIArgs --map-by": _mpi_args("--map-by"),
        "extraMPIArgs --prefix": _add(
            "worker", "extraMPIArgs", entries=lambda v: ["--prefix", _absolute(v)]
        ),
        "extraMPIArgs -mca value": _mpi_args("-mca", "canary"),
        "extraMPIArgs --gmca name": _mpi_args("--gmca", after="1"),
        "cmd": _add("worker", "cmd"),
        "workingDir": _put_path(*_MPI_WORKER, "workingDir"),
        **_env(_MPI_WORKER),
    },
)
_HOROVOD_WORKER = ("worker", "template", "spec", "containers", 0)
HOROVODJOB = CanaryKind(
    HorovodJobKind(),
    tuple(
        {
            "worker": {
                "replicas": 2,
                "cmd": ["python", "train.py"],
                "template": {"spec": {"containers": [_container("worker")]}},
            },
            "horovod": {"backend": backend, "networkInterfaces": []},
            "ssh": {"sshAuthMountPath": "/home/user/.ssh"},
            **({"elastic": {"minReplicas": 1, "maxReplicas": 3}} if elastic else {}),
        }
        for backend, elastic in (("gloo", False), ("mpi", False), ("gloo", True))
    ),
    {
        "spec.ssh.sshdPath": _put_path("ssh", "sshdPath"),
        "spec.ssh.sshAuthMountPath": _put_path("ssh", "sshAuthMountPath"),
        "spec.horovod.networkInterfaces": _add("horovod", "networkInterfaces"),
        "cmd": _add("worker", "cmd"),
        "workingDir": _put_path(*_HOROVOD_WORKER, "workingDir"),
        **_env(_HOROVOD_WORKER),
    },
)
COLOSSALAIJOB = CanaryKind(
    ColossalAIJobKind(),
    (
        {
            "ssh": {},
            "launcher": {"image": "img", "workingDir": "/work", "env": []},
            "worker": {
                "replicas": 2,
                "command": ["train.py", "--lr", "0.1"],
                "torchArgs": ["--max_restarts=1"],
                "template": {"spec": {"containers": [_container("worker")]}},
            },
        },
    ),
    {
        "spec.ssh.sshdPath": _put_path("ssh", "sshdPath"),
        "spec.ssh.authMountPath": _put_path("ssh", "authMountPath"),
        "spec.ssh.sshAuthMountPath": _put_path("ssh", "sshAuthMountPath"),
        "spec.launcher.workingDir": _put_path("launcher", "workingDir"),
        "command": _add("worker", "command"),
        "command script": lambda draft, value: draft.spec["worker"]["command"].insert(
            0, value + ".py"
        ),
        "torchArgs option": _add("worker", "torchArgs", entries=lambda v: ["--" + v]),
        "torchArgs value": _add("worker", "torchArgs", entries=lambda v: ["--rdzv_id=" + v]),
        "env name": _add("launcher", "env", entries=_named_entry),
        "env name valueFrom": _value_from(("launcher",), None, "configMapKeyRef"),
        "envFrom prefix": _env_from(("launcher",), "configMapRef"),
    },
)
_KUBEFLOW_LAUNCHER = ("mpiReplicaSpecs", "Launcher", "template", "spec", "containers", 0)
KUBEFLOW_MPIJOB = CanaryKind(
    KubeflowMPIJobKind(),
    tuple(
        {
            "mpiImplementation": mpi,
            "slotsPerWorker": 1,
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                _container(
                                    "mpi-launcher", command=[program, "-n", "2", "./pi"], args=[]
                                )
                            ]
                        }
                    },
                },
                "Worker": {
                    "replicas": 2,
                    "template": {"spec": {"containers": [_container("mpi-worker")]}},
                },
            },
        }
        for mpi, program in (("OpenMPI", "mpirun"), ("MPICH", "mpiexec"), ("Intel", "mpiexec"))
    ),
    {
        "Launcher command, an argument of its program": _add(*_KUBEFLOW_LAUNCHER, "command"),
        "Launcher args, after its command": _add(*_KUBEFLOW_LAUNCHER, "args"),
        "Launcher env name": _add(*_KUBEFLOW_LAUNCHER, "env", entries=_named_entry),
        "Launcher env value": _add(
            *_KUBEFLOW_LAUNCHER, "env", entries=lambda v: [{"name": "CANARY", "value": v}]
        ),
        "Launcher valueFrom Secret": _value_from(_KUBEFLOW_LAUNCHER, "CANARY", "secretKeyRef"),
        "Launcher envFrom ConfigMap": _env_from(_KUBEFLOW_LAUNCHER, "configMapRef", key="CANARY"),
        "Launcher envFrom prefix": _env_from(_KUBEFLOW_LAUNCHER, "configMapRef"),
    },
    annotations={TRANSPORT_ANNOTATION: "agent"},
)
"""Kubeflow's MPIJob through the agent: the launcher's command is the user's own, run as
Kubeflow runs it (so are its MPI settings: an `OMPI_MCA_` variable in it is the user's to
write, as over ssh); the fields are what the agent's wrapping hands on, the command's
arguments and the launcher's environment."""


def over_agent(canary: CanaryKind) -> CanaryKind:
    """A T9k kind's variants with `spec.transport: agent`."""
    return dataclasses.replace(
        canary, specs=tuple({**s, "transport": "agent"} for s in canary.specs)
    )


def open_mpi_only(mpijob: CanaryKind) -> CanaryKind:
    """An MPIJob's Open MPI variants only: what the real mpirun runs."""
    return dataclasses.replace(mpijob, specs=mpijob.specs[:1])


KINDS = {"MPIJob": MPIJOB, "HorovodJob": HOROVODJOB, "ColossalAIJob": COLOSSALAIJOB}
"""Over ssh."""
AGENT_KINDS = {
    **{name: over_agent(canary) for name, canary in KINDS.items()},
    "Kubeflow MPIJob": KUBEFLOW_MPIJOB,
}
"""Through jobcore's agent."""
