"""The shell examples of the documentation pages (docs/**/*.md), with the comment that marks
each: ``<!-- runs -->`` (a test runs it against a fresh server), ``<!-- runs: allow 404 -->``
(reads that answer 404 before any job has completed are fine), ``<!-- runs: setup -->`` (the
variables every page's examples use, run before each page's blocks) or ``<!-- needs: why -->``
(it cannot run offline: a provider key, a long-running process, internet access)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# A fence of shell, and the non-blank line before it (its mark, if it has one). The line's
# leading blanks are [^\S\n]*, not [^\n]*: that one backtracked over every line of a page
# (0.25 CPU-s for docs/ at each collection, against 0.02).
_FENCE = re.compile(
    r"(?:^(?P<before>[^\S\n]*\S[^\n]*)\n)?^```(?:sh|bash|shell)\n(?P<body>.*?)^```", re.M | re.S
)
_PYTHON = re.compile(r"^```python\n(?P<body>.*?)^```", re.M | re.S)
_MARK = re.compile(r"<!--\s*(?P<kind>runs|needs)(?::\s*(?P<rest>.*?))?\s*-->")


@dataclass(frozen=True)
class Block:
    page: str  # relative to docs/
    line: int
    body: str
    kind: str | None  # "runs", "needs" or None (unmarked)
    note: str  # what follows the colon: "setup", "allow 404", or why it cannot run

    @property
    def setup(self) -> bool:
        return self.kind == "runs" and self.note == "setup"

    @property
    def allowed(self) -> set[int]:
        """HTTP statuses of 400 and over this block may meet."""
        found = re.match(r"allow\s+([\d,\s]+)$", self.note)
        return {int(code) for code in re.findall(r"\d+", found.group(1))} if found else set()

    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        mark = _MARK.fullmatch((match.group("before") or "").strip())
        found.append(
            Block(
                page=page.relative_to(DOCS).as_posix(),
                line=text.count("\n", 0, match.start("body")),
                body=match.group("body"),
                kind=mark.group("kind") if mark else None,
                note=(mark.group("rest") or "").strip() if mark else "",
            )
        )
    return found


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """The page's ``python`` blocks: (line, code)."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("body")), m.group("body")) for m in _PYTHON.finditer(text)]


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def every_block() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]
