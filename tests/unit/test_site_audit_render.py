"""The rendering rules on given pages, and a renderer's answer bounded (it is Chromium's
account of a hostile page)."""

from __future__ import annotations

from seojobs.kinds.site_audit.check import Rendering
from seojobs.kinds.site_audit.page import parse_page
from seojobs.kinds.site_audit.render import _rendered
from seojobs.kinds.site_audit.rules_render import INJECTED_WORDS, RULES
from tests.unit.test_site_audit_checks import _codes, _page

CODES = {check.code for check, _rule in RULES}


def _found(raw: str, rendered: str, error: str | None = None) -> set[str]:
    page = _page(rendered, rendering=Rendering(parse_page(raw), error=error))
    return _codes(page) & CODES


def _words(n: int) -> str:
    return "<p>" + " ".join(f"w{i}" for i in range(n)) + "</p>"


def test_a_page_scripts_leave_alone_has_nothing_to_report() -> None:
    html = "<title>t</title><h1>h</h1>" + _words(300)
    assert _found(html, html) == set()


def test_injected_content_needs_twice_the_words_and_the_margin() -> None:
    assert _found(_words(10), _words(10 + INJECTED_WORDS)) == {"content_only_rendered"}
    assert _found(_words(10), _words(10 + INJECTED_WORDS - 1)) == set()
    # Many more words, but not twice as many: the served HTML had the content.
    assert _found(_words(300), _words(300 + INJECTED_WORDS)) == set()


def test_an_unrendered_page_says_why_and_compares_nothing() -> None:
    found = _found("<title>a</title>", "<title>a</title>", error="Navigation timeout")
    assert found == {"render_failed"}


def test_a_hostile_answer_is_bounded() -> None:
    answer = {
        "status": "200",  # not an int: dropped
        "final_url": "x" * 10_000,
        "errors": ["e" * 10_000] * 1_000,
        "blocked": [{"url": "u" * 10_000, "reason": "r" * 1_000}] * 1_000 + ["not a dict"],
        "truncated": "yes",  # only true is true
    }
    done = _rendered("<p>", answer)
    assert done.status is None and done.truncated is False
    assert done.final_url is not None and len(done.final_url) == 2000
    assert len(done.errors) == 20 and all(len(e) == 300 for e in done.errors)
    assert len(done.blocked) == 50 and all(len(b["url"]) == 300 for b in done.blocked)
    assert _rendered("<p>", {"errors": "nope", "blocked": None}).errors == ()
