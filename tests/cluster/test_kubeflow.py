"""Kubeflow's MPIJob (kubeflow.org/v2beta1) through the in-cluster controller, as a Kubeflow user
runs it: the non-root pi example applied with kubectl, its launcher a batch/v1 Job that the
cluster's own Job controller runs, read with kubectl."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.sandbox import images
from jobcore.testing import condition
from jobcore.testing import require
from jobkinds.kubeflow.wait import WAIT_CONTAINER
from tests.cluster.conftest import ROOT
from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.integration

SAMPLE = ROOT / "manifests" / "samples" / "kubeflow-mpijob-pi-nonroot.yaml"
MPIJOB = "mpijobs.kubeflow.org/kubeflow-pi"
"""Qualified: T9k's MPIJob (batch.tensorstack.dev) is `mpijobs` too."""
RESOLVED = r"^jobcore: every worker's name resolves \(waited (\d+)s\)$"
"""The last line of the launcher's wait (`jobkinds.kubeflow.wait`)."""
CPU = "500m"
"""Each pod's CPU limit: the sample's 1 CPU x 3 pods do not fit the 2-core node."""


def scaled_down(sample: Path, folder: Path) -> Path:
    """The sample with each container's CPU limit lowered to CPU, as a user on a small node
    edits it, and run as Kubeflow runs it by default and unforgiving: its launcher created with
    its workers (launcherCreationPolicy AtStartup) and never retried (backoffLimit 0), so a
    launcher that starts before the workers' names resolve fails the job."""
    job: dict[str, Any] = yaml.safe_load(sample.read_text())
    for replica in job["spec"]["mpiReplicaSpecs"].values():
        for container in replica["template"]["spec"]["containers"]:
            container["resources"]["limits"]["cpu"] = CPU
    job["spec"].pop("launcherCreationPolicy", None)
    job["spec"]["runPolicy"]["backoffLimit"] = 0
    edited = folder / sample.name
    edited.write_text(yaml.safe_dump(job))
    return edited


def test_kubeflows_non_root_pi_example_succeeds(
    cluster: Cluster, cluster_namespace: str, tmp_path: Path
) -> None:
    """Its launcher, started with its workers, used to lose the race with their DNS records
    (`ssh: Could not resolve hostname`): 0 of 5 runs succeeded before the launcher's wait. One
    run shows the wait: its init container's log says how long the names took to resolve."""
    require(images.missing("mpi-pi"))
    ns = ("-n", cluster_namespace)
    cluster.kubectl("apply", *ns, "-f", str(scaled_down(SAMPLE, tmp_path)))
    wait = ("wait", *ns, "--for=condition=Succeeded", MPIJOB, "--timeout=150s")
    if "condition met" not in cluster.kubectl(*wait, timeout=170, check=False):
        job = cluster.kubectl("get", *ns, "-o", "yaml", MPIJOB)
        logs = cluster.kubectl("logs", *ns, "job/kubeflow-pi-launcher", check=False)
        pytest.fail(f"kubeflow-pi did not succeed:\n{job}\n{logs}")

    log = cluster.kubectl("logs", *ns, "job/kubeflow-pi-launcher")
    assert "Workers: 2\n" in log, log
    hosts = dict(re.findall(r"^Rank (\d) on host (\S+)$", log, re.M))
    assert hosts == {"0": "kubeflow-pi-worker-0", "1": "kubeflow-pi-worker-1"}, log
    assert set(re.findall(r"^Rank \d runs as uid (\d+) gid (\d+)$", log, re.M)) == {
        ("1000", "1000")
    }, log
    estimate = re.search(r"^pi is approximately (\d+\.\d+)$", log, re.M)
    assert estimate and math.isclose(float(estimate[1]), math.pi, abs_tol=0.01), log

    # Kubernetes' Job controller ran the launcher in one pod, once: its init container waited
    # for the workers' names, then mpirun ran.
    launcher = cluster.json("job", *ns, "kubeflow-pi-launcher")
    assert launcher["status"]["succeeded"] == 1, launcher["status"]
    assert condition(launcher["status"], "Complete")["status"] == "True", launcher["status"]
    (pod,) = cluster.json("pods", *ns, "-l", "training.kubeflow.org/job-role=launcher")["items"]
    assert re.fullmatch(r"kubeflow-pi-launcher-[a-z0-9]{5}", pod["metadata"]["name"]), pod
    assert pod["spec"]["restartPolicy"] == "OnFailure", pod["spec"]
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    (container,) = pod["status"]["containerStatuses"]
    ended = container["state"]["terminated"]
    assert (ended["exitCode"], ended["reason"]) == (0, "Completed"), container
    assert container["restartCount"] == 0, container
    (waited,) = pod["status"]["initContainerStatuses"]
    assert waited["state"]["terminated"]["exitCode"] == 0, waited
    wait_log = cluster.logs(cluster_namespace, pod["metadata"]["name"], WAIT_CONTAINER)
    resolved = re.search(RESOLVED, wait_log, re.M)
    assert resolved, wait_log
    print(f"kubeflow-pi: the launcher waited {resolved[1]} s for its workers' names")
    # cleanPodPolicy Running: the workers' sshd still ran, so they went; the launcher stays.
    workers = ("-l", "training.kubeflow.org/job-role=worker")
    gone = ("wait", *ns, "--for=delete", "pod", *workers, "--timeout=60s")
    cluster.kubectl(*gone, timeout=70, check=False)  # "no matching resources" once gone
    assert cluster.json("pods", *ns, *workers)["items"] == []
    status = cluster.json(*ns, MPIJOB)["status"]
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"Created": "True", "Running": "False", "Succeeded": "True"}, status
    assert status["replicaStatuses"]["Launcher"] == {"active": 0, "failed": 0, "succeeded": 1}
