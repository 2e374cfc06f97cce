"""Logging configuration: JSON lines carrying the reconcile context, stdlib logs included."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from jobcore._runtime.logs import configure_logging
from jobcore._runtime.logs import reconcile_context


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """configure_logging changes process-wide state; put it back for the other tests."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.captureWarnings(False)
    structlog.reset_defaults()


def _lines(err: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in err.splitlines() if line.strip()]


def test_reconcile_context_is_on_every_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(format="json")
    log = structlog.get_logger("jobcore.test")
    with reconcile_context(controller="demojob", key="ns/job") as reconcile_id:
        log.info("reconciling", pods=3)
        logging.getLogger("kubernetes_asyncio.test").warning("from the stdlib")
    log.info("outside")

    inside, stdlib, outside = _lines(capsys.readouterr().err)
    assert len(reconcile_id) == 16
    assert inside["event"] == "reconciling"
    assert inside["pods"] == 3
    assert inside["level"] == "info"
    assert inside["logger"] == "jobcore.test"
    assert str(inside["timestamp"]).endswith("Z")
    for line in (inside, stdlib):
        assert line["controller"] == "demojob"
        assert line["key"] == "ns/job"
        assert line["reconcile_id"] == reconcile_id
    assert stdlib["event"] == "from the stdlib"
    assert stdlib["level"] == "warning"
    assert stdlib["logger"] == "kubernetes_asyncio.test"
    assert "reconcile_id" not in outside


def test_each_reconcile_gets_a_fresh_id() -> None:
    with reconcile_context(controller="c", key="k") as first:
        pass
    with reconcile_context(controller="c", key="k") as second:
        pass
    assert first != second


def test_level_filters(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(format="json", level="warning")
    log = structlog.get_logger("jobcore.test")
    log.info("dropped")
    logging.getLogger("aiohttp.test").info("dropped too")
    log.warning("kept")
    assert [line["event"] for line in _lines(capsys.readouterr().err)] == ["kept"]


def test_exceptions_are_a_json_field(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(format="json")
    try:
        raise ValueError("boom")
    except ValueError:
        structlog.get_logger("jobcore.test").exception("failed")
    (line,) = _lines(capsys.readouterr().err)
    assert "ValueError: boom" in str(line["exception"])


def test_console_format(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(format="console")
    with reconcile_context(controller="demojob", key="ns/job"):
        structlog.get_logger("jobcore.test").info("reconciling")
    err = capsys.readouterr().err
    assert "reconciling" in err
    assert "controller=demojob" in err


def test_unknown_level_is_rejected() -> None:
    with pytest.raises(ValueError, match="verbose"):
        configure_logging(level="verbose")
