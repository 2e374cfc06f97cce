"""What the job layer's caches keep: a stub for a job over the spec limit that still reads as
one, digests for the values of ConfigMaps and Secrets that compare as the values do, and a
child larger than any the controller makes as its metadata only."""

from __future__ import annotations

from jobcore._jobs.cached import MAX_CHILD_BYTES
from jobcore._jobs.cached import MAX_DIGESTED_KEYS
from jobcore._jobs.cached import MAX_SPEC_BYTES
from jobcore._jobs.cached import child_transform
from jobcore._jobs.cached import digests
from jobcore._jobs.cached import job_as_cached
from jobcore._jobs.cached import oversized
from jobcore._jobs.cached import spec_bytes
from jobcore._jobs.parse import parse_job
from jobcore._runtime.jsoncodec import dumps
from jobcore._runtime.resources import CONFIGMAPS
from jobcore._runtime.resources import PODS
from jobcore._runtime.resources import SECRETS
from jobcore.testing import job_manifest
from jobkinds.mpijob import MPIJobKind

KIND = MPIJobKind()


def big_job(run_policy: dict[str, object] | None = None) -> dict[str, object]:
    env = [{"name": f"V{i}", "value": "x" * 1000} for i in range(400)]
    container = {"name": "mpi-worker", "image": "mpi", "env": env}
    spec: dict[str, object] = {
        "worker": {
            "replicas": 2,
            "cmd": ["./train"],
            "template": {"spec": {"containers": [container]}},
        }
    }
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    return job_manifest(KIND, spec, name="big", namespace="ns", uid="u1")


def test_a_job_over_the_limit_is_cached_as_a_stub_that_keeps_its_run_policy_and_size() -> None:
    job = big_job({"cleanUpPolicy": "All"})
    size = len(dumps(job["spec"]))
    assert size > MAX_SPEC_BYTES
    cached = job_as_cached(job)
    assert cached["spec"] == {"runPolicy": {"cleanUpPolicy": "All"}}
    assert spec_bytes(cached) == size
    assert len(dumps(cached)) < 2_000

    parsed, errors = parse_job(KIND, cached)
    assert parsed is None
    assert [e.path for e in errors] == ["spec"]
    assert f"is {size:,} bytes as JSON, more than the {MAX_SPEC_BYTES:,} bytes" in errors[0].message


def test_a_job_within_the_limit_is_cached_as_it_came_but_for_the_bulk() -> None:
    job = job_manifest(KIND, {"worker": {"replicas": 1, "cmd": ["x"]}}, name="j", namespace="n")
    job["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    spec = dict(job["spec"])
    cached = job_as_cached(job)
    assert cached["spec"] == spec
    assert "managedFields" not in cached["metadata"]
    assert spec_bytes(cached) == len(dumps(spec))


def test_a_stored_job_cannot_pass_for_a_stub_with_a_size_it_names() -> None:
    job = job_manifest(KIND, {"worker": {"replicas": 1, "cmd": ["x"]}}, name="j", namespace="n")
    job["jobcore.dev/specBytes"] = 999_999_999
    assert spec_bytes(job_as_cached(job)) == len(dumps(job["spec"]))


def test_configmap_and_secret_values_are_cached_as_digests_that_compare_as_the_values() -> None:
    transform = child_transform(CONFIGMAPS)
    configmap = {
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"hostfile": "x" * 900_000},
    }
    cached = transform(configmap)
    assert set(cached["data"]) == {"hostfile"}
    assert len(dumps(cached)) < 200
    assert cached["data"] == digests({"hostfile": "x" * 900_000})
    assert cached["data"] != digests({"hostfile": "x" * 899_999})


def test_past_the_key_bound_one_digest_stands_for_all_keys() -> None:
    many = {f"k{i}": "" for i in range(MAX_DIGESTED_KEYS + 1)}
    assert list(digests(many)) == [""]
    assert digests(many) == digests(dict(reversed(many.items())))
    assert digests(many) != digests({**many, "k0": "changed"})


def test_a_spec_nested_deeper_than_python_recurses_is_cached_for_parse_job_to_refuse() -> None:
    job = job_manifest(KIND, {"worker": {"replicas": 1, "cmd": ["x"]}}, name="j", namespace="n")
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    job["spec"]["x"] = deep
    cached = job_as_cached(job)
    parsed, errors = parse_job(KIND, cached)
    assert parsed is None
    assert "nests deeper than" in errors[0].message


def pod(env_bytes: int) -> dict[str, object]:
    env = [{"name": f"V{i}", "value": "x" * 1000} for i in range(env_bytes // 1000)]
    owner = {"kind": "MPIJob", "name": "train", "uid": "u1", "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-worker-0",
            "namespace": "ns",
            "uid": "p1",
            "resourceVersion": "7",
            "labels": {"bulk": "y" * 60},
            "annotations": {"note": "z" * 1000},
            "ownerReferences": [owner, {"kind": "Other", "name": "o", "uid": "u2"}],
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"containers": [{"name": "c", "image": "i", "env": env}]},
        "status": {"phase": "Running"},
    }


def test_a_child_within_the_bound_is_cached_whole_but_for_the_bulk() -> None:
    for resource in (PODS, CONFIGMAPS):
        child = pod(MAX_CHILD_BYTES - 10_000)
        cached = child_transform(resource)(child)
        assert oversized(cached) is None
        assert cached["spec"]["containers"][0]["env"][-1]["value"] == "x" * 1000
        assert "managedFields" not in cached["metadata"]


def test_a_child_larger_than_any_the_controller_makes_is_cached_as_its_metadata_only() -> None:
    child = pod(1_400_000)
    cached = child_transform(PODS)(child)
    noted = oversized(cached)
    assert noted == len(dumps(child)) > MAX_CHILD_BYTES  # as it came but for managedFields
    assert set(cached) == {"apiVersion", "kind", "metadata", "jobcore.dev/childBytes"}
    assert cached["metadata"] == {
        "name": "train-worker-0",
        "namespace": "ns",
        "uid": "p1",
        "resourceVersion": "7",
        "ownerReferences": [{"kind": "MPIJob", "name": "train", "uid": "u1", "controller": True}],
    }
    assert len(dumps(cached)) < 400


def test_no_stored_child_can_pass_for_an_oversized_one() -> None:
    child = pod(1000)
    child["jobcore.dev/childBytes"] = 999_999_999
    assert oversized(child_transform(PODS)(child)) is None
    assert oversized(child_transform(SECRETS)(child)) is None
