"""The code the documentation shows: a fenced block right after a line `<!-- file: PATH -->`
in a page of docs/ is the whole of the file PATH (relative to docs/); a Python block right after
`<!-- excerpt -->` is a part of a program, whose imports name the public API.

The programs in docs/ are kept as files under docs/examples/, which the suite type-checks and
runs; the pages show them in full, and tests/docs/test_examples.py holds each block equal to its
file. tests/docs/test_python_blocks.py holds every Python block to one of the two marks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
EXAMPLES = DOCS / "examples"
_SHOWN = re.compile(r"^<!-- file: (?P<path>\S+) -->\n```[a-z]*\n(?P<text>.*?)^```$", re.M | re.S)
_PYTHON = re.compile(r"^(?P<mark><!-- [^\n]* -->\n)?```python\n(?P<text>.*?)^```$", re.M | re.S)
EXCERPT = "<!-- excerpt -->"


@dataclass(frozen=True, slots=True)
class PythonBlock:
    """A ```python block of a page: where it starts, the comment on the line before it (or "")
    and its text."""

    page: Path
    line: int
    mark: str
    text: str

    def __str__(self) -> str:
        return f"docs/{self.page.relative_to(DOCS)}:{self.line}"


def shown_files() -> dict[Path, list[tuple[Path, str]]]:
    """Each example file the pages show: the page and the block's text, per showing."""
    found: dict[Path, list[tuple[Path, str]]] = {}
    for page in sorted(DOCS.glob("*.md")):
        for match in _SHOWN.finditer(page.read_text(encoding="utf-8")):
            found.setdefault(DOCS / match["path"], []).append((page, match["text"]))
    return found


def python_blocks() -> list[PythonBlock]:
    """Every ```python block of every page under docs/, in page and line order."""
    blocks = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in _PYTHON.finditer(text):
            line = text.count("\n", 0, match.start("text"))  # the fence's own line, from 1
            mark = (match["mark"] or "").strip()
            blocks.append(PythonBlock(page, line, mark, match["text"]))
    return blocks


def example_files() -> list[Path]:
    """Every file under docs/examples but empty ones (a `py.typed` marker) and caches."""
    return sorted(
        path
        for path in EXAMPLES.rglob("*")
        if path.is_file() and path.stat().st_size > 0 and "__pycache__" not in path.parts
    )
