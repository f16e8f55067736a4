"""The documentation's examples are marked and well-formed: every ``sh`` block says whether a
test runs it (``<!-- runs -->``, see tests/e2e/test_docs_examples.py) or why it cannot run
offline (``<!-- needs: … -->``); every ``python`` block compiles and imports only names that
exist."""

from __future__ import annotations

import ast
import importlib

from tests.docblocks import DOCS, every_block, pages, python_blocks


def test_every_shell_example_is_marked() -> None:
    """A block that does not run must say why: a reader (and this suite) can tell an example
    that cannot run offline from one nobody tried."""
    unmarked = [b.where() for b in every_block() if b.kind is None]
    assert not unmarked, f"mark these <!-- runs --> or <!-- needs: why -->: {unmarked}"
    assert all(b.note for b in every_block() if b.kind == "needs")


def test_the_marks_are_read() -> None:
    """The parser finds what the pages hold: a setup, run blocks with and without allowed
    statuses, and blocks that cannot run (so the tests on them cannot pass on nothing)."""
    found = every_block()
    assert sum(b.setup for b in found) == 1
    assert any(b.kind == "runs" and b.allowed == {404} for b in found)
    assert any(b.kind == "runs" and not b.allowed and not b.setup for b in found)
    assert any(b.kind == "needs" for b in found)
    assert len({b.page for b in found if b.kind == "runs"}) >= 10


def test_python_examples_compile_and_import_what_exists() -> None:
    checked = 0
    for page in pages():
        for line, code in python_blocks(page):
            where = f"docs/{page.relative_to(DOCS).as_posix()}:{line}"
            tree = ast.parse(code, filename=where)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module:
                    module = importlib.import_module(node.module)
                    for alias in node.names:
                        assert hasattr(module, alias.name), f"{where}: {node.module}.{alias.name}"
                        checked += 1
    assert checked >= 5


def test_pictures_stay_small() -> None:
    """Screenshots are copied in by hand: a full-size one would weigh on every clone."""
    pictures = list((DOCS / "img").glob("*.png"))
    assert pictures
    assert all(p.stat().st_size < 100_000 for p in pictures), {
        p.name: p.stat().st_size for p in pictures
    }
