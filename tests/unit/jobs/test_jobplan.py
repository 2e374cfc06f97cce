"""plan and run_mode_errors on plain objects: run modes and scheduling over a render."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobcore import CONFIGMAPS
from jobcore import PODS
from jobcore import Object
from jobcore import Resource
from jobcore._jobs.plan import plan
from jobcore.jobs import RUN_MODE_LABEL
from jobcore.jobs import Job
from jobcore.jobs import JobKind
from jobcore.jobs import JobSpec
from jobcore.jobs import Observed
from jobcore.jobs import ResumeSpec
from jobcore.jobs import SchedulerPlugins
from jobcore.jobs import run_mode_errors
from jobcore.testing import ModelKind
from jobcore.testing import job_manifest
from jobcore.testing import job_of

PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


@dataclass(frozen=True)
class PlanKind(ModelKind[JobSpec]):
    """Renders a ConfigMap and one pod of each replica type: `launcher` and `worker` name
    their main container (after a sidecar), `server` does not (its first container is the
    main one)."""

    def render(self, job: Job[JobSpec], observed: Observed) -> list[Object]:
        config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j-config"}}
        return [config, *(self._pod(job, t) for t in self.replica_types)]

    def _pod(self, job: Job[JobSpec], replica_type: str) -> Object:
        main = {
            "name": self.containers.get(replica_type, replica_type),
            "command": ["train"],
            "args": ["--fast"],
            **{probe: {"tcpSocket": {"port": 22}} for probe in PROBES},
        }
        sidecar = {"name": "sidecar", "command": ["tail"]}
        containers = [sidecar, main] if replica_type in self.containers else [main, sidecar]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"j-{replica_type}", "labels": job.labels(replica_type, 0)},
            "spec": {"initContainers": [{"name": "init"}], "containers": containers},
        }


KIND: JobKind[JobSpec] = PlanKind(
    Resource("example.com", "v1", "PlanJob", "planjobs"),
    JobSpec,
    replica_types=("launcher", "worker", "server"),
    child_resources=(CONFIGMAPS, PODS),
    containers={"launcher": "main", "worker": "main"},
    debug_commands={"worker": None},  # workers keep their command in debug mode
)
NOTHING = Observed({})


def make_job(run_mode: Mapping[str, Any] | None = None) -> Job[JobSpec]:
    raw = {"runMode": run_mode} if run_mode else {}
    return job_of(KIND, job_manifest(KIND, raw, name="j", namespace="ns"))


def debug_job(*replica_specs: Mapping[str, Any]) -> Job[JobSpec]:
    return make_job({"debug": {"enabled": True, "replicaSpecs": list(replica_specs)}})


def pods(objects: list[Object]) -> dict[str, Object]:
    return {o["metadata"]["labels"]["jobcore.dev/replica-type"]: o for o in objects[1:]}


def container(pod: Object, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in pod["spec"]["containers"] if c["name"] == name)
    return found


def test_a_normal_run_is_the_kinds_render() -> None:
    job = make_job()
    planned = plan(KIND, job, NOTHING)
    assert planned == KIND.render(job, NOTHING)
    assert all(RUN_MODE_LABEL not in (o["metadata"].get("labels") or {}) for o in planned)


def test_debug_runs_sleep_inf_in_the_main_container_without_probes() -> None:
    planned = pods(plan(KIND, debug_job(), NOTHING))
    for replica_type, name in (("launcher", "main"), ("server", "server")):
        main = container(planned[replica_type], name)
        assert main == {"name": name, "command": ["sleep", "inf"]}, replica_type
        assert container(planned[replica_type], "sidecar")["command"] == ["tail"]
        assert planned[replica_type]["spec"]["initContainers"] == [{"name": "init"}]


def test_debug_default_none_keeps_the_rendered_command_and_probes() -> None:
    worker = pods(plan(KIND, debug_job(), NOTHING))["worker"]
    main = container(worker, "main")
    assert (main["command"], main["args"]) == (["train"], ["--fast"])
    assert set(PROBES) <= main.keys()


def test_debug_command_of_one_type_and_skip_init_container() -> None:
    job = debug_job(
        {"type": "worker", "command": ["bash", "-l"], "skipInitContainer": True},
        {"type": "server", "command": ["sh"]},
    )
    planned = pods(plan(KIND, job, NOTHING))
    assert container(planned["worker"], "main") == {"name": "main", "command": ["bash", "-l"]}
    assert "initContainers" not in planned["worker"]["spec"]
    assert container(planned["launcher"], "main")["command"] == ["sleep", "inf"]
    assert "initContainers" in planned["launcher"]["spec"]
    assert container(planned["server"], "server") == {"name": "server", "command": ["sh"]}
    assert "initContainers" in planned["server"]["spec"]


def test_debug_pods_carry_the_run_mode_label() -> None:
    planned = plan(KIND, debug_job(), NOTHING)
    assert "labels" not in planned[0]["metadata"]
    for pod in planned[1:]:
        assert pod["metadata"]["labels"][RUN_MODE_LABEL] == "debug"
        assert pod["metadata"]["labels"]["jobcore.dev/job-name"] == "j"


def test_resume_specs_replace_command_args_and_init_containers() -> None:
    resume = [
        ResumeSpec.model_validate({"type": "worker", "command": ["resume"]}),
        ResumeSpec.model_validate(
            {"type": "launcher", "args": ["--from-checkpoint"], "skipInitContainer": True}
        ),
        ResumeSpec.model_validate({"type": "server", "command": ["serve"], "args": ["-v"]}),
    ]
    planned = pods(plan(KIND, make_job(), NOTHING, resume_specs=resume))
    worker = container(planned["worker"], "main")
    assert (worker["command"], "args" in worker) == (["resume"], False)
    assert set(PROBES) <= worker.keys()
    assert "initContainers" in planned["worker"]["spec"]
    launcher = container(planned["launcher"], "main")
    assert (launcher["command"], launcher["args"]) == (["train"], ["--from-checkpoint"])
    assert "initContainers" not in planned["launcher"]["spec"]
    server = container(planned["server"], "server")
    assert (server["command"], server["args"]) == (["serve"], ["-v"])
    assert all(RUN_MODE_LABEL not in p["metadata"]["labels"] for p in planned.values())


def test_the_gang_schedulers_fields_go_on_every_pod() -> None:
    scheduler = SchedulerPlugins(scheduler_name="gang")
    planned = plan(KIND, debug_job(), NOTHING, scheduler=scheduler)
    assert "spec" not in planned[0]
    for pod in planned[1:]:
        assert pod["spec"]["schedulerName"] == "gang"
        assert pod["metadata"]["labels"][SchedulerPlugins.GROUP_LABEL] == "j"
        assert pod["metadata"]["labels"][RUN_MODE_LABEL] == "debug"


def test_a_paused_job_keeps_its_other_children_but_gets_no_pods() -> None:
    for job in (
        make_job({"pause": {"enabled": True}}),
        make_job({"pause": {"enabled": True}, "debug": {"enabled": True}}),
    ):
        planned = plan(KIND, job, NOTHING, scheduler=SchedulerPlugins())
        assert [o["kind"] for o in planned] == ["ConfigMap"]


def test_run_mode_errors_name_each_unknown_type() -> None:
    spec = JobSpec.model_validate(
        {
            "runMode": {
                "debug": {"replicaSpecs": [{"type": "worker"}, {"type": "master"}]},
                "pause": {"resumeSpecs": [{"type": "Launcher"}]},
            }
        }
    )
    assert [str(e) for e in run_mode_errors(spec, ("launcher", "worker"))] == [
        "spec.runMode.debug.replicaSpecs[1].type: must be 'launcher' or 'worker', got 'master'",
        "spec.runMode.pause.resumeSpecs[0].type: must be 'launcher' or 'worker', got 'Launcher'",
    ]
    assert run_mode_errors(make_job().spec, ("launcher",)) == []
    assert run_mode_errors(make_job({"debug": {"enabled": True}}).spec, ("launcher",)) == []
