"""Configure structured logging for the process and bind per-reconcile context to every line."""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal
from typing import TextIO

import structlog
from structlog.typing import Processor

__all__ = ["configure_logging", "reconcile_context"]

LogFormat = Literal["auto", "json", "console"]


def configure_logging(
    *, format: LogFormat = "auto", level: str = "info", stream: TextIO | None = None
) -> None:
    """Send structlog and stdlib logging alike to `stream` (default stderr), a line per event.

    JSON lines suit log collectors; "auto" picks the human-readable console renderer only
    when the stream is a terminal. Context variables bound with `structlog.contextvars` (see
    `reconcile_context`) are merged into every line, including lines from libraries that log
    through the stdlib (kubernetes_asyncio, aiohttp), so they too can be traced to a
    reconcile. The console prints tracebacks plainly, never with their frames' local
    variables (which may hold tokens). Call it once at start-up; calling it again replaces
    the configuration.
    """
    levels = logging.getLevelNamesMapping()
    level_no = levels.get(level.upper())
    if level_no is None:
        raise ValueError(f"unknown log level {level!r}")
    stream = stream or sys.stderr
    console = format == "console" or (format == "auto" and stream.isatty())
    renderer: Processor = (
        structlog.dev.ConsoleRenderer(
            colors=stream.isatty(), exception_formatter=structlog.dev.plain_traceback
        )
        if console
        else structlog.processors.JSONRenderer()
    )
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    # The console renderer prints tracebacks itself; JSON needs them as a string field.
    final: list[Processor] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if not console:
        final.append(structlog.processors.format_exc_info)
    final.append(renderer)

    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(foreign_pre_chain=shared, processors=final)
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level_no)
    logging.captureWarnings(True)
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(level_no),
        # Uncached, so reconfiguring (and structlog.testing.capture_logs) reaches every logger.
        cache_logger_on_first_use=False,
    )


@contextmanager
def reconcile_context(*, controller: str, key: str) -> Iterator[str]:
    """Bind `controller`, `key` and a fresh `reconcile_id` to every log line in the block.

    Yields the reconcile id. The binding lives in a context variable, so concurrent
    reconciles in separate asyncio tasks each keep their own.
    """
    reconcile_id = uuid.uuid4().hex[:16]
    with structlog.contextvars.bound_contextvars(
        controller=controller, key=key, reconcile_id=reconcile_id
    ):
        yield reconcile_id
