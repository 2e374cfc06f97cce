"""Unit tests for label selectors: parsing the string form, matching, rendering LabelSelectors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobcore._runtime.labels import parse_selector
from jobcore._runtime.labels import selector_to_string

LABELS = {"app": "web", "tier": "frontend", "env": "prod", "example.com/team": "a-b_c.d"}


def matches(selector: str, labels: dict[str, str]) -> bool:
    return parse_selector(selector)(labels)


# --- equality ---------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["=", "=="])
def test_equality_matches_only_the_exact_value(op: str) -> None:
    assert matches(f"app{op}web", LABELS)
    assert not matches(f"app{op}api", LABELS)
    assert not matches(f"app{op}we", LABELS)
    assert not matches(f"missing{op}web", LABELS)


def test_inequality_matches_other_values_and_absent_keys() -> None:
    assert matches("app!=api", LABELS)
    assert not matches("app!=web", LABELS)
    assert matches("missing!=web", LABELS), "an absent key is not equal to any value"


def test_equality_with_prefixed_key_and_punctuated_value() -> None:
    assert matches("example.com/team=a-b_c.d", LABELS)
    assert not matches("example.com/team=a-b_c", LABELS)


def test_equality_with_empty_value_matches_an_empty_label_only() -> None:
    assert matches("app=", {"app": ""})
    assert not matches("app=", {"app": "web"})
    assert not matches("app=", {})


# --- set based ----------------------------------------------------------------------------------


def test_in_matches_any_listed_value() -> None:
    assert matches("env in (prod,staging)", LABELS)
    assert matches("env in (staging, prod)", LABELS)
    assert not matches("env in (dev,staging)", LABELS)
    assert not matches("missing in (prod)", LABELS), "an absent key is in no set"


def test_notin_matches_unlisted_values_and_absent_keys() -> None:
    assert matches("env notin (dev,staging)", LABELS)
    assert not matches("env notin (dev,prod)", LABELS)
    assert matches("missing notin (prod)", LABELS)


def test_exists_and_does_not_exist() -> None:
    assert matches("app", LABELS)
    assert not matches("missing", LABELS)
    assert matches("!missing", LABELS)
    assert not matches("!app", LABELS)
    assert matches("app", {"app": ""}), "existence does not depend on the value"


# --- combinations and whitespace ----------------------------------------------------------------


def test_combined_requirements_must_all_hold() -> None:
    selector = "app=web,tier!=db,env in (prod,staging),!legacy,example.com/team"
    assert matches(selector, LABELS)
    assert not matches(selector, {**LABELS, "legacy": "true"})
    assert not matches(selector, {**LABELS, "tier": "db"})
    assert not matches(selector, {**LABELS, "env": "dev"})
    assert not matches(selector, {k: v for k, v in LABELS.items() if k != "example.com/team"})


def test_commas_inside_a_value_set_do_not_split_requirements() -> None:
    selector = "env in (dev,prod),app=web"
    assert matches(selector, LABELS)
    assert not matches(selector, {**LABELS, "app": "api"})
    assert not matches(selector, {**LABELS, "env": "qa"})


def test_whitespace_around_tokens_is_ignored() -> None:
    selector = "  app = web ,  tier  !=  db , env   in   ( dev ,  prod )  ,  ! legacy , app "
    assert matches(selector, LABELS)
    assert not matches(selector, {**LABELS, "env": "qa"})
    assert not matches(selector, {**LABELS, "legacy": "x"})


@pytest.mark.parametrize("selector", ["", " ", "   \t"])
def test_empty_selector_matches_everything(selector: str) -> None:
    assert matches(selector, {})
    assert matches(selector, LABELS)


@pytest.mark.parametrize(
    "selector",
    [
        "app=web=x",
        "app web",
        "=web",
        "!=web",
        "app in (a,b",
        "app in a,b",
        "app notin",
        "app ~= web",
        "app=we b",
        "!",
        "app=web,tier in (x",
        "app=web,bad key",
    ],
)
def test_malformed_selector_raises_value_error(selector: str) -> None:
    with pytest.raises(ValueError):
        parse_selector(selector)


# --- selector_to_string -------------------------------------------------------------------------


def test_selector_to_string_renders_match_labels_sorted_by_key() -> None:
    selector = {"matchLabels": {"tier": "frontend", "app": "web"}}
    assert selector_to_string(selector) == "app=web,tier=frontend"


def test_selector_to_string_renders_every_expression_operator() -> None:
    selector: dict[str, Any] = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "staging"]},
            {"key": "tier", "operator": "NotIn", "values": ["db"]},
            {"key": "team", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist"},
        ],
    }
    rendered = selector_to_string(selector)
    assert rendered == "app=web,env in (prod,staging),tier notin (db),team,!legacy"
    matcher = parse_selector(rendered)
    good = {"app": "web", "env": "staging", "tier": "frontend", "team": "x"}
    assert matcher(good)
    assert not matcher({**good, "legacy": "1"})
    assert not matcher({**good, "tier": "db"})
    assert not matcher({k: v for k, v in good.items() if k != "team"})


@pytest.mark.parametrize(
    "selector", [{}, {"matchLabels": None, "matchExpressions": None}, {"matchLabels": {}}]
)
def test_empty_label_selector_renders_empty_and_matches_everything(
    selector: dict[str, Any],
) -> None:
    assert selector_to_string(selector) == ""
    assert parse_selector(selector_to_string(selector))(LABELS)


# --- properties ---------------------------------------------------------------------------------

_NAME = r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,20}[A-Za-z0-9])?"
label_keys = st.from_regex(rf"\A([a-z0-9]([a-z0-9.-]{{0,10}}[a-z0-9])?/)?{_NAME}\Z")
label_values = st.one_of(st.just(""), st.from_regex(rf"\A{_NAME}\Z"))
label_dicts = st.dictionaries(label_keys, label_values, max_size=8)


@given(labels=label_dicts, data=st.data())
def test_equality_selector_built_from_labels_matches_them(
    labels: dict[str, str], data: st.DataObject
) -> None:
    chosen = data.draw(
        st.lists(st.sampled_from(sorted(labels)), unique=True) if labels else st.just([])
    )
    op = data.draw(st.sampled_from(["=", "=="]))
    selector = ",".join(f"{key}{op}{labels[key]}" for key in chosen)
    assert parse_selector(selector)(labels)


@given(labels=label_dicts.filter(bool), data=st.data())
def test_equality_selector_rejects_a_changed_value(
    labels: dict[str, str], data: st.DataObject
) -> None:
    key = data.draw(st.sampled_from(sorted(labels)))
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    assert not parse_selector(selector)({**labels, key: labels[key] + "x"})
    assert not parse_selector(selector)({k: v for k, v in labels.items() if k != key})


@given(labels=label_dicts)
def test_match_labels_round_trip_through_selector_to_string(labels: dict[str, str]) -> None:
    matcher = parse_selector(selector_to_string({"matchLabels": labels}))
    assert matcher(labels)
    assert matcher({"unrelated": "label", **labels}), "labels not named are not constrained"
