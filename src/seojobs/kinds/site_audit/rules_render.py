"""Rules about what JavaScript changed (``render: "js"`` audits only): the raw HTML as served
beside the DOM Chromium rendered from it, script errors and resources that failed to load.
A crawler that does not run scripts, or runs them later, sees the raw page: what only the
rendered one has may be missed or indexed late."""

from __future__ import annotations

from collections.abc import Callable

from seojobs.kinds.site_audit.check import SAMPLE, Check, E, Evidence, N, Page, Rules, W
from seojobs.kinds.site_audit.page import PageFacts
from seojobs.kinds.site_audit.params import Thresholds

# content_only_rendered: the rendered text has at least this many more words, and at least
# twice the raw HTML's.
INJECTED_WORDS = 50


def _compared(test: Callable[[PageFacts, PageFacts], Evidence]) -> Callable[..., Evidence]:
    """A rule over (raw, rendered) facts of a page that rendered."""

    def rule(page: Page, _t: Thresholds) -> Evidence:
        rendering = page.rendering
        if rendering is None or rendering.error or rendering.raw is None or page.facts is None:
            return None
        return test(rendering.raw, page.facts)

    return rule


def _changed(value: Callable[[PageFacts], object]) -> Callable[..., Evidence]:
    def test(raw: PageFacts, rendered: PageFacts) -> Evidence:
        before, after = value(raw), value(rendered)
        return None if before == after else {"raw": before, "rendered": after}

    return _compared(test)


def _failed(page: Page, _t: Thresholds) -> Evidence:
    rendering = page.rendering
    return {"error": rendering.error} if rendering is not None and rendering.error else None


def _script_errors(page: Page, _t: Thresholds) -> Evidence:
    rendering = page.rendering
    if rendering is None or not rendering.script_errors:
        return None
    return {"errors": list(rendering.script_errors[:SAMPLE])}


def _blocked(page: Page, _t: Thresholds) -> Evidence:
    rendering = page.rendering
    if rendering is None or not rendering.blocked:
        return None
    return {"resources": list(rendering.blocked[:SAMPLE])}


def _robots(f: PageFacts) -> list[str]:
    return sorted(f"{name}: {content}".lower() for name, content in f.robots_meta)


def _h1_only_rendered(raw: PageFacts, rendered: PageFacts) -> Evidence:
    return {"h1": rendered.h1[0]} if rendered.h1 and not raw.h1 else None


def _links_only_rendered(raw: PageFacts, rendered: PageFacts) -> Evidence:
    served = {link.href for link in raw.links}
    added = list(dict.fromkeys(link.href for link in rendered.links if link.href not in served))
    return {"links": added[:SAMPLE], "count": len(added)} if added else None


def _content_only_rendered(raw: PageFacts, rendered: PageFacts) -> Evidence:
    more = rendered.words - raw.words
    if more < INJECTED_WORDS or rendered.words < 2 * raw.words:
        return None
    return {"raw_words": raw.words, "rendered_words": rendered.words}


RULES: Rules = [
    (
        Check(
            "render_failed",
            W,
            "The page could not be rendered in Chromium (audited from its raw HTML).",
        ),
        _failed,
    ),
    (
        Check("render_script_errors", W, "Scripts threw errors while the page rendered."),
        _script_errors,
    ),
    (
        Check(
            "render_blocked_resources",
            N,
            "Requests of the page failed while it rendered (unreachable, or another host).",
        ),
        _blocked,
    ),
    (
        Check("rendered_title_changed", W, "Scripts change the title the HTML serves."),
        _changed(lambda f: f.title),
    ),
    (
        Check("rendered_description_changed", W, "Scripts change the meta description served."),
        _changed(lambda f: f.description),
    ),
    (
        Check("rendered_canonical_changed", E, "Scripts change the canonical link served."),
        _changed(lambda f: f.canonicals[:1]),
    ),
    (
        Check("rendered_robots_changed", E, "Scripts change the robots meta directives served."),
        _changed(_robots),
    ),
    (
        Check("h1_only_rendered", W, "The page has an <h1> only once scripts have run."),
        _compared(_h1_only_rendered),
    ),
    (
        Check("links_only_rendered", W, "Links that exist only once scripts have run."),
        _compared(_links_only_rendered),
    ),
    (
        Check(
            "content_only_rendered",
            W,
            "Most of the page's text is injected by scripts (at least twice the served "
            f"HTML's words, and {INJECTED_WORDS} more).",
        ),
        _compared(_content_only_rendered),
    ),
]
