"""The objects a SleepJob creates: one Pod per replica."""

from jobcore import Object
from jobcore.jobs import Job
from sleepjob.spec import SleepJobSpec

WORKER = "worker"


def pod(job: Job[SleepJobSpec], index: int) -> Object:
    spec = job.spec.template.pod_spec()  # new dicts around the template's shared parts
    spec["restartPolicy"] = "Never"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{job.name}-{index}", "labels": job.labels(WORKER, index)},
        "spec": spec,
    }
