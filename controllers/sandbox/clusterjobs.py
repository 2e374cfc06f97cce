"""The real-run samples (`realjobs`) made to run in the real cluster's containers.

Each framework comes with its image (`scripts/images.sh`); the programs a sample writes into its
folder reach the pods as a ConfigMap mounted at that same path, so a sample's commands are the
same on the process-backed node and in a container.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from controllers.sandbox import images
from controllers.sandbox import realjobs
from jobcore import Object
from jobcore.launcher import Transport

FRAMEWORK_IMAGES = ("openmpi4", "mpich", "intel", "colossalai", "horovod")
"""The frameworks that have an image of their own with sshd (Open MPI 5 has none)."""
AGENT_IMAGES = {
    "openmpi4": "mpi-pi-nosshd",
    "openmpi5": "openmpi5-nosshd",
    "mpich": "mpich-nosshd",
    "intel": "intel-nosshd",
}
"""The sshd-free image of each MPI, for jobs launched through jobcore's agent: Open MPI 4's is
Kubeflow's pi stand-in without sshd (the allreduce too, and no Python); Open MPI 5's is its only
image. ColossalAI's and Horovod's keep their sshd, which the agent leaves unused."""
PROGRAMS_VOLUME = "jobcore-programs"


def installs(transport: Transport = "ssh") -> realjobs.Installs:
    """Every framework in its image, as `scripts/images.sh` tagged it last (those built); for
    the agent `transport`, the MPIs' sshd-free images."""
    chosen = {name: name for name in FRAMEWORK_IMAGES}
    if transport == "agent":
        chosen |= AGENT_IMAGES
    built = {name: image for name, image in chosen.items() if images.missing(image) is None}
    return realjobs.Installs({name: images.reference(image) for name, image in built.items()})


def programs_configmap(folder: Path, *, name: str, namespace: str) -> Object:
    """The files of `folder` as a ConfigMap (binary ones as binaryData)."""
    data: dict[str, str] = {}
    binary: dict[str, str] = {}
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        content = path.read_bytes()
        try:
            data[path.name] = content.decode()
        except UnicodeDecodeError:
            binary[path.name] = base64.b64encode(content).decode()
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
        "binaryData": binary,
    }


def with_programs(job: Object, folder: Path, configmap: str) -> Object:
    """`job` with the ConfigMap `configmap` mounted at `folder` in every pod template, its files
    executable (scripts run as programs)."""
    for template in _templates(job["spec"]):
        pod = template["spec"]
        volume = {
            "name": PROGRAMS_VOLUME,
            "configMap": {"name": configmap, "defaultMode": 0o755},
        }
        pod["volumes"] = [*pod.get("volumes", ()), volume]
        for container in pod["containers"]:
            mount = {"name": PROGRAMS_VOLUME, "mountPath": str(folder), "readOnly": True}
            container["volumeMounts"] = [*container.get("volumeMounts", ()), mount]
    return job


def with_programs_configmap(job: Object, folder: Path) -> tuple[Object, Object]:
    """`job` with the programs its sample wrote into `folder` mounted in every pod at that path,
    and the ConfigMap `JOB-programs` (in the job's namespace) that holds them, to create first."""
    meta = job["metadata"]
    name = f"{meta['name']}-programs"
    configmap = programs_configmap(folder, name=name, namespace=meta["namespace"])
    return with_programs(job, folder, name), configmap


def _templates(spec: Any) -> list[dict[str, Any]]:
    """Every pod template below `spec`, in any kind's shape."""
    found: list[dict[str, Any]] = []
    if isinstance(spec, dict):
        template = spec.get("template")
        if isinstance(template, dict) and "containers" in template.get("spec", {}):
            found.append(template)
        for key, value in spec.items():
            if key != "template":
                found += _templates(value)
    elif isinstance(spec, list):
        for value in spec:
            found += _templates(value)
    return found
