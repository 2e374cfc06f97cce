"""`jobcore kinds`, `validate` and `render` as users run them: no cluster needed."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import time
from importlib.metadata import EntryPoint
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
import uvloop
import yaml

from controllers import cli
from controllers import kinds
from controllers.kinds import ENTRY_POINT_GROUP
from tests.support.commands import kept_logging
from tests.support.commands import run_cli
from tests.unit.cli.test_render import billion_laughs

SAMPLES_DIR = Path(__file__).resolve().parents[3] / "manifests" / "samples"
SAMPLES = sorted(p for p in SAMPLES_DIR.glob("*.yaml") if p.name != "kustomization.yaml")
RANDOM_WALK = SAMPLES_DIR / "mpijob-random-walk.yaml"

INVALID = RANDOM_WALK.read_text().replace("    replicas: 5\n", "    replicas: 0\n")
"""The random-walk sample with no workers: invalid at its `replicas` line."""
INVALID_LINE = INVALID.splitlines().index("    replicas: 0") + 1


def kinds_of(stream: str) -> list[tuple[str, str]]:
    return [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(stream)]


def test_there_are_samples() -> None:
    assert RANDOM_WALK in SAMPLES


# kinds -----------------------------------------------------------------------------------------


def test_kinds_lists_the_bundled_kinds_with_their_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(capsys, "kinds")
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header.split() == ["NAME", "KIND", "GROUP/VERSION", "SHORT", "NAMES", "SOURCE"]
    mpijob = next(row.split() for row in rows if row.startswith("mpijob "))
    assert mpijob[:4] == ["mpijob", "MPIJob", "batch.tensorstack.dev/v1beta1", "mj,mpij"]
    assert mpijob[4] == "jobcore-k8s"  # the distribution, then its version


def fake_entry_points(monkeypatch: pytest.MonkeyPatch, extra: list[EntryPoint]) -> None:
    real = entry_points(group=ENTRY_POINT_GROUP)

    def with_extra(*, group: str) -> list[EntryPoint]:
        assert group == ENTRY_POINT_GROUP
        return [*real, *extra]

    monkeypatch.setattr(kinds, "entry_points", with_extra)


def test_a_broken_kind_is_reported_and_skipped_and_fails_the_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = EntryPoint("broken", "no_such_module_jobcore:Kind", ENTRY_POINT_GROUP)
    fake_entry_points(monkeypatch, [broken])
    code, out, err = run_cli(capsys, "kinds")
    assert code == 1
    assert "mpijob" in out and "broken" not in out
    assert "job kind 'broken'" in err and "ModuleNotFoundError" in err


def test_no_kinds_installed_fails_the_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kinds, "entry_points", lambda *, group: [])
    code, out, err = run_cli(capsys, "kinds")
    assert (code, out) == (1, "")
    assert "no job kinds installed" in err


# validate --------------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.name for p in SAMPLES])
def test_every_sample_validates(capsys: pytest.CaptureFixture[str], sample: Path) -> None:
    code, out, err = run_cli(capsys, "validate", str(sample))
    assert code == 0, err
    assert out.rstrip().endswith(": valid")


def test_validate_takes_several_files_and_reports_each_job(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, "validate", *(str(p) for p in SAMPLES))
    assert code == 0
    assert len(out.splitlines()) == len(SAMPLES)


def test_an_invalid_job_exits_1_with_its_line_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(RANDOM_WALK.read_text() + "---\n" + INVALID)
    code, out, err = run_cli(capsys, "validate", str(path))
    assert code == 1
    assert out.splitlines() == [f"{path}:2: MPIJob mpi-example: valid"]
    lines = len(RANDOM_WALK.read_text().splitlines()) + 1
    assert err.splitlines() == [
        f"{path}:{lines + INVALID_LINE}: spec.worker.replicas: "
        "Input should be greater than or equal to 1"
    ]


def test_validate_fails_on_unreadable_or_empty_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "empty.yaml").write_text("# nothing\n")
    (tmp_path / "broken.yaml").write_text("a: [1\n")
    files = [str(tmp_path / name) for name in ("missing.yaml", "empty.yaml", "broken.yaml")]
    code, _, err = run_cli(capsys, "validate", *files)
    assert code == 1
    assert err.splitlines()[:2] == [
        f"{files[0]}: cannot read: No such file or directory",
        f"{files[1]}: no documents",
    ]
    assert err.splitlines()[2].startswith(f"{files[2]}:2: not valid YAML: ")


@pytest.mark.parametrize("command", ["validate", "render"])
def test_hostile_yaml_is_refused_at_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    """An alias bomb (10^10 nodes once expanded) as a job's spec, and 100,000 nested lists."""
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(
        "apiVersion: batch.tensorstack.dev/v1beta1\nkind: MPIJob\nmetadata: {name: bomb}\n"
        + billion_laughs().replace("\n", "\n  ").replace("a0:", "x:\n  a0:", 1)
        + "spec: {worker: *a9}\n"
    )
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 100_000)
    start = time.process_time()  # CPU time: a loaded machine's waits are not the parser's
    code, out, err = run_cli(capsys, command, str(bomb), str(deep))
    seconds = time.process_time() - start
    with capsys.disabled():
        print(
            f"\njobcore {command}: alias bomb and 100,000 nested lists refused in "
            f"{seconds:.2f} CPU s"
        )
    assert seconds < 2
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        f"{bomb}:10: not accepted: aliases expand to more than 1,000,000 nodes (an alias bomb?)",
        f"{deep}:1: not accepted: collections nested more than 100 deep",
    ]


def test_validate_reads_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(INVALID))
    code, _, err = run_cli(capsys, "validate", "-")
    assert code == 1
    assert err.startswith(f"<stdin>:{INVALID_LINE}: spec.worker.replicas: ")


# render ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.name for p in SAMPLES])
def test_every_sample_renders(capsys: pytest.CaptureFixture[str], sample: Path) -> None:
    code, out, err = run_cli(capsys, "render", "--workers-ready", str(sample))
    assert code == 0, err
    job = yaml.safe_load(sample.read_text())
    for child in yaml.safe_load_all(out):
        owner = child["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"]) == (job["kind"], job["metadata"]["name"])


def test_render_shows_the_launcher_only_once_workers_are_ready(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, first, _ = run_cli(capsys, "render", str(RANDOM_WALK))
    assert code == 0
    assert ("Pod", "mpi-example-launcher") not in kinds_of(first)
    code, ready, _ = run_cli(capsys, "render", "--workers-ready", str(RANDOM_WALK))
    assert code == 0
    children = kinds_of(ready)
    assert children[:3] == [
        ("Secret", "mpi-example-ssh"),
        ("ConfigMap", "mpi-example-hostfile"),
        ("Service", "mpi-example"),
    ]
    assert children[-1] == ("Pod", "mpi-example-launcher")
    assert len(children) == 3 + 5 + 1


def test_render_gang_scheduler_and_namespace_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["render", str(RANDOM_WALK), "-n", "team-a", "--gang-scheduler", "volcano"]
    code, out, _ = run_cli(capsys, *argv, "--gang-queue", "research")
    assert code == 0
    group, *rest = yaml.safe_load_all(out)
    assert (group["kind"], group["spec"]["queue"]) == ("PodGroup", "research")
    assert {child["metadata"]["namespace"] for child in [group, *rest]} == {"team-a"}


def test_render_the_t9k_scheduler_sample_has_its_pod_group(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, "render", str(SAMPLES_DIR / "mpijob-t9k-scheduler.yaml"))
    assert code == 0
    group: dict[str, Any] = next(yaml.safe_load_all(out))
    assert group["apiVersion"] == "scheduler.tensorstack.dev/v1beta1"
    assert group["spec"] == {"minMember": 3, "queue": "default", "priority": 50}


def test_render_redacts_secrets_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "render", "--redact-secrets", str(RANDOM_WALK))
    assert code == 0
    secret = next(yaml.safe_load_all(out))
    assert set(secret["data"].values()) == {"<redacted>"}
    assert "PRIVATE KEY" not in out


def test_render_json_is_a_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "render", "-o", "json", str(RANDOM_WALK))
    assert code == 0
    assert yaml.safe_load(out)["kind"] == "List"


def test_render_prints_nothing_for_an_invalid_job(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(INVALID)
    code, out, err = run_cli(capsys, "render", str(RANDOM_WALK), str(path))
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}:{INVALID_LINE}: spec.worker.replicas: ")


def test_the_installed_command_reads_stdin() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "controllers", "render", "--workers-ready", "-"],
        input=RANDOM_WALK.read_text(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert kinds_of(result.stdout)[-1] == ("Pod", "mpi-example-launcher")


def test_commands_run_on_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    loops: list[type] = []

    async def probe(args: Any) -> int:
        loops.append(type(asyncio.get_running_loop()))
        return 0

    monkeypatch.setitem(cli._COMMANDS, "kinds", probe)
    with kept_logging():
        assert cli.main(["kinds"]) == 0
    assert loops == [uvloop.Loop]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--kube-api-qps", "-1"), "argument --kube-api-qps: must be at least 0, not -1"),
        (("--kube-api-burst", "0"), "argument --kube-api-burst: must be at least 1, not 0"),
        (("--kube-api-qps", "fast"), "argument --kube-api-qps: invalid float value: 'fast'"),
        (("--retry-backoff-max", "86401"), "maximum <= 86400 seconds"),
        (
            ("--leader-elect", "--leader-election-renew-deadline", "20"),
            "lease_duration must exceed renew_deadline",
        ),
        (
            (
                "--kueue-manage-jobs-without-queue-name",
                "--kueue-managed-jobs-namespace-selector",
                "a in (",
            ),
            "invalid label selector requirement: 'a in ('",
        ),
        (
            ("--namespace", "team", "--kueue-managed-jobs-namespace-selector", "queued=yes"),
            "a namespaced install cannot read Namespaces",
        ),
    ],
)
def test_run_refuses_settings_it_cannot_keep_before_it_connects(
    capsys: pytest.CaptureFixture[str], flags: tuple[str, str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        run_cli(capsys, "run", "--kubeconfig", "/nonexistent", *flags)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "sample",
    ["mpijob-random-walk.yaml", "kubeflow-mpijob-openmpi.yaml", "colossalaijob-example.yaml"],
)
def test_render_names_workers_in_the_cluster_domain(
    capsys: pytest.CaptureFixture[str], sample: str
) -> None:
    path = str(SAMPLES_DIR / sample)
    code, out, _ = run_cli(
        capsys, "render", "--workers-ready", path, "--cluster-domain", "corp.lan"
    )
    assert code == 0
    hostfiles = [
        line.split()[0]
        for child in yaml.safe_load_all(out)
        if child["kind"] == "ConfigMap"
        for line in child["data"]["hostfile"].splitlines()
    ]
    assert hostfiles and all(host.endswith(".default.svc.corp.lan") for host in hostfiles), out
    assert "cluster.local" not in out
    with pytest.raises(SystemExit) as refused, kept_logging():
        cli.main(["render", path, "--cluster-domain", "Not_A_Domain"])
    assert refused.value.code == 2
    assert "--cluster-domain: invalid cluster_domain value" in capsys.readouterr().err


def test_render_shows_the_agent_from_the_image_given_in_place_of_sshd(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("mpijob-agent", "kubeflow-mpijob-agent"):
        argv = ["render", "--workers-ready", "--agent-image", "registry.example/jobcore:9"]
        code, out, err = run_cli(capsys, *argv, str(SAMPLES_DIR / f"{name}.yaml"))
        assert code == 0, err
        pods = [c for c in yaml.safe_load_all(out) if c["kind"] in ("Pod", "Job")]
        for pod in pods:
            spec = pod["spec"].get("template", pod)["spec"]
            assert spec["initContainers"][0]["image"] == "registry.example/jobcore:9"
            command = " ".join(spec["containers"][0]["command"])
            assert "sshd" not in command and command.startswith("/jobcore/agent/jobcore-agent ")


def test_validate_names_an_unknown_transport(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sample = (SAMPLES_DIR / "kubeflow-mpijob-agent.yaml").read_text()
    path = tmp_path / "job.yaml"
    path.write_text(sample.replace("jobcore.dev/transport: agent", "jobcore.dev/transport: rsh"))
    code, out, err = run_cli(capsys, "validate", str(path))
    assert code == 1
    assert 'metadata.annotations[jobcore.dev/transport]: Unsupported value: "rsh"' in out + err


@pytest.mark.parametrize(
    "command", [["dashboard"], ["describe", "mpijob/x"], ["logs", "mpijob/x"], ["run"]]
)
def test_an_unreadable_kubeconfig_is_one_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\n")
    code, _, err = run_cli(capsys, *command, "--kubeconfig", str(broken))
    assert code == 2
    assert f"jobcore: cannot read {broken}: Invalid kube-config file" in err, err
    assert "Traceback" not in err
