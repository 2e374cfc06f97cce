"""The example files the documentation shows: a fenced block right after a line
`<!-- file: PATH -->` in a page of docs/ is the whole of the file PATH (relative to docs/).

The code in docs/ is kept as files under docs/examples/, which the suite type-checks and runs;
the pages show them in full, and tests/docs/test_examples.py holds each block equal to its file.
"""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
EXAMPLES = DOCS / "examples"
_SHOWN = re.compile(r"^<!-- file: (?P<path>\S+) -->\n```[a-z]*\n(?P<text>.*?)^```$", re.M | re.S)


def shown_files() -> dict[Path, list[tuple[Path, str]]]:
    """Each example file the pages show: the page and the block's text, per showing."""
    found: dict[Path, list[tuple[Path, str]]] = {}
    for page in sorted(DOCS.glob("*.md")):
        for match in _SHOWN.finditer(page.read_text(encoding="utf-8")):
            found.setdefault(DOCS / match["path"], []).append((page, match["text"]))
    return found


def example_files() -> list[Path]:
    """Every file under docs/examples but empty ones (a `py.typed` marker) and caches."""
    return sorted(
        path
        for path in EXAMPLES.rglob("*")
        if path.is_file() and path.stat().st_size > 0 and "__pycache__" not in path.parts
    )
