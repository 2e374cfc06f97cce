"""The Grafana dashboard in docs/grafana: valid JSON that queries only metrics jobcore exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobcore import REGISTRY

DASHBOARD = Path(__file__).resolve().parents[3] / "docs" / "grafana" / "jobcore-dashboard.json"

_SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
    "gauge": ("",),
    "info": ("_info",),
}
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or"}
    | {"unless", "offset", "inf", "nan"}
)
_IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def exported_series() -> set[str]:
    """Every series name the controller's registry can expose, suffixes included."""
    names = set()
    for family in REGISTRY.collect():
        for suffix in _SUFFIXES[family.type]:
            names.add(family.name + suffix)
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are not functions,
    keywords, label names (in `{...}`, `by (...)`), ranges or strings."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\$\w+", "", expr)
    return {
        match.group()
        for match in _IDENTIFIER.finditer(expr)
        if match.group().lower() not in _KEYWORDS
        and not expr[match.end() :].lstrip().startswith("(")
        and not expr[: match.start()][-1:].isdigit()  # the e3 of 1e3
    }


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", ())


def expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    for panel in panels(dashboard):
        for target in panel.get("targets", ()):
            yield panel["title"], target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"]
            inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", query)
            yield f"variable {variable['name']}", inner.group(1) if inner else query


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def test_metric_names_are_found_in_promql() -> None:
    assert metric_names(
        'histogram_quantile(0.99, sum by (le, controller) (rate(a_bucket{x=~"y|z"}[5m])))'
    ) == {"a_bucket"}
    assert metric_names("sum(rate(a_sum[$__rate_interval])) / sum(rate(a_count[1h]))") == {
        "a_sum",
        "a_count",
    }
    assert metric_names('count(b{k=~"$kind"}) or vector(1e3)') == {"b"}


def test_every_metric_a_panel_queries_is_one_the_controller_exports(
    dashboard: dict[str, Any],
) -> None:
    exported = exported_series()
    unknown = {
        (where, name)
        for where, expr in expressions(dashboard)
        for name in metric_names(expr)
        if name not in exported
    }
    assert not unknown, f"metrics jobcore does not export: {sorted(unknown)}"


def test_the_dashboard_covers_the_controller_and_job_metrics(dashboard: dict[str, Any]) -> None:
    used = {name for _, expr in expressions(dashboard) for name in metric_names(expr)}
    for name in (
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_bucket",
        "workqueue_depth",
        "workqueue_queue_duration_seconds_bucket",
        "rest_client_requests_total",
        "jobcore_jobs_created_total",
        "jobcore_jobs_succeeded_total",
        "jobcore_jobs_failed_total",
        "jobcore_jobs_restarted_total",
        "jobcore_job_info",
        "leader_election_master_status",
    ):
        assert name in used, f"no panel queries {name}"


def test_panels_are_well_formed(dashboard: dict[str, Any]) -> None:
    ids = [panel["id"] for panel in panels(dashboard)]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for panel in panels(dashboard):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, f"{panel['title']} is wider than the dashboard"
        if panel["type"] != "row":
            assert panel["targets"], f"{panel['title']} has no query"
            assert panel["datasource"]["uid"] == "${datasource}"
    names = [variable["name"] for variable in dashboard["templating"]["list"]]
    assert names[0] == "datasource", "the data source is chosen on import"
    assert dashboard["uid"] and dashboard["id"] is None
