"""`jobcore sandbox --cluster`: the machine's real cluster, the controller deployed in it from
its manifests as docs/deployment.md installs it, and a sample job run in real containers.

Needs root and `scripts/cluster.sh`'s set-up (the node's packages and the images). The cluster
outlives the command with `keep`, for kubectl; `take_down` stops it later.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import TextIO

from controllers.kinds import BUNDLED_KINDS
from controllers.kinds import installed_kinds
from controllers.manifests import NAME
from controllers.manifests import NAMESPACE
from controllers.manifests import write_manifests
from controllers.sandbox import clusterjobs
from controllers.sandbox import images
from controllers.sandbox import realjobs
from controllers.sandbox.local import SandboxError
from controllers.sandbox.local import dashboard
from controllers.sandbox.local import follow
from jobcore import CONFIGMAPS
from jobcore import Client
from jobcore.launcher import Transport
from jobcore.testing import RealCluster
from jobcore.testing import RealClusterError
from jobcore.testing import images_folder
from jobcore.testing import real_cluster_available

SET_UP = "scripts/cluster.sh"


async def deploy(cluster: RealCluster, manifests: Path, *, timeout: float = 180) -> float:
    """`kubectl apply -k manifests`, then wait until the controller's replicas are Ready;
    the seconds that took."""
    started = time.monotonic()
    await cluster.commands.kubectl("apply", "-k", str(manifests))
    await cluster.commands.kubectl(
        "rollout", "status", "-n", NAMESPACE, f"deployment/{NAME}", f"--timeout={timeout:.0f}s"
    )
    return time.monotonic() - started


async def run_cluster_sandbox(
    *,
    kind: str = "mpijob",
    mpi: str = "openmpi",
    launch: Transport = "ssh",
    keep: bool = False,
    namespace: str = "default",
    cluster: RealCluster | None = None,
    out: TextIO,
) -> str:
    """Run `kind`'s sample (an MPIJob with `mpi`) in the real cluster, launched over `launch`
    (through the agent, an MPI's image is its sshd-free one), showing its status as it
    changes and its launcher's output; its final phase. A `cluster` given is used as it is;
    else the machine's is started, and stopped at the end unless `keep`."""
    framework = realjobs.framework(kind, mpi)
    image = clusterjobs.AGENT_IMAGES.get(framework, framework) if launch == "agent" else framework
    if image not in images.NAMES:
        raise SandboxError(
            f"the {kind} sample with {mpi} has no image for the {launch} launch; "
            "choose another --mpi"
        )
    if cluster is None and (reason := real_cluster_available()):
        raise SandboxError(f"cannot run a real cluster here: {reason}")
    if reason := images.missing("pause", "jobcore", image):
        raise SandboxError(f"{reason} (or run {SET_UP})")
    owned = cluster is None
    cluster = cluster or RealCluster(images_folder())
    try:
        if owned:
            await cluster.start()
            steps = ", ".join(f"{step} {seconds} s" for step, seconds in cluster.timings.items())
            out.write(f"real cluster up ({steps})\n")
        else:
            await cluster.import_images(images_folder())
        with tempfile.TemporaryDirectory(prefix="jobcore-sandbox-") as scratch:
            kinds = [installed.kind for installed in installed_kinds(BUNDLED_KINDS)]
            manifests = Path(scratch) / "manifests"
            write_manifests(kinds, manifests)
            seconds = await deploy(cluster, manifests)
            out.write(f"controller deployed with kubectl apply -k: Ready in {seconds:.1f} s\n")
            out.write(
                f"try: KUBECONFIG={cluster.kubeconfig_path} kubectl get pods -A\n"
                f"     (kubectl is in $KUBEBUILDER_ASSETS)\n"
            )
            out.flush()
            programs = Path(scratch) / "programs"
            programs.mkdir()
            programs.chmod(0o755)
            installs = clusterjobs.installs(launch)
            sample = realjobs.sample(
                kind, mpi, programs, namespace=namespace, installs=installs, transport=launch
            )
            phase = await _run(cluster, sample, programs, out)
    except RealClusterError as error:
        raise SandboxError(str(error)) from error
    finally:
        if owned and not keep:
            await cluster.stop()
    if owned and keep:
        out.write("the cluster stays up; `jobcore sandbox --cluster --down` takes it down\n")
    return phase


async def _run(cluster: RealCluster, sample: realjobs.Sample, programs: Path, out: TextIO) -> str:
    """Create the sample with its programs' ConfigMap, follow it, print its launcher's output."""
    name, namespace = sample.job["metadata"]["name"], sample.job["metadata"]["namespace"]
    job, configmap = clusterjobs.with_programs_configmap(sample.job, programs)
    client = await Client.from_kubeconfig(cluster.kubeconfig_path)
    try:
        async with dashboard(client, installed_kinds(BUNDLED_KINDS), out):
            await client.create(CONFIGMAPS, configmap)
            await client.create(sample.resource, job)
            phase = await follow(client, sample, keep=False, out=out)
    finally:
        await client.close()
    logs = await cluster.commands.kubectl(
        "logs", "-n", namespace, f"{name}-launcher", "-c", sample.launcher_container, check=False
    )
    out.write(f"launcher output:\n{logs.stdout}")
    return phase


async def take_down(out: TextIO) -> None:
    """Stop the machine's real cluster (left up by `keep`) and put the host back."""
    cluster = RealCluster()
    try:
        await cluster.claim()
    except RealClusterError as error:
        raise SandboxError(str(error)) from error
    await cluster.stop()
    out.write("the real cluster is down\n")
