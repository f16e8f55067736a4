"""Page rules about the content: title, description, headings, text, images, head metadata,
structured data and obsolete markup."""

from __future__ import annotations

from typing import Any

from seojobs.kinds.site_audit.check import (
    SAMPLE,
    Check,
    E,
    Evidence,
    N,
    Rules,
    W,
    html,
    listed,
    missing,
)
from seojobs.kinds.site_audit.languages import valid_language
from seojobs.kinds.site_audit.page import PageFacts
from seojobs.kinds.site_audit.params import Thresholds


def _length(name: str, value: str | None, limit: int, over: bool) -> Evidence:
    if not value:
        return None
    hit = len(value) > limit if over else len(value) < limit
    return {name: value, "length": len(value)} if hit else None


def _title_long(f: PageFacts, t: Thresholds) -> Evidence:
    return _length("title", f.title, t.title_max_chars, over=True)


def _title_short(f: PageFacts, t: Thresholds) -> Evidence:
    return _length("title", f.title, t.title_min_chars, over=False)


def _description_long(f: PageFacts, t: Thresholds) -> Evidence:
    return _length("description", f.description, t.description_max_chars, over=True)


def _description_short(f: PageFacts, t: Thresholds) -> Evidence:
    return _length("description", f.description, t.description_min_chars, over=False)


def _same(text: str | None, other: str | None) -> bool:
    return bool(text) and (text or "").casefold() == (other or "").casefold()


def _title_is_h1(f: PageFacts, _t: Thresholds) -> Evidence:
    return {"title": f.title} if f.h1 and _same(f.title, f.h1[0]) else None


def _title_is_description(f: PageFacts, _t: Thresholds) -> Evidence:
    return {"title": f.title} if _same(f.title, f.description) else None


def _h1_empty(f: PageFacts, _t: Thresholds) -> Evidence:
    return {"h1": f.h1} if "" in f.h1 else None


def _h1_long(f: PageFacts, t: Thresholds) -> Evidence:
    long = [text for text in f.h1 if len(text) > t.h1_max_chars]
    return {"h1": long[0], "length": len(long[0])} if long else None


def _h2_missing(f: PageFacts, _t: Thresholds) -> Evidence:
    return {"h2": 0} if f.h1 and not f.h2 else None


def _skips(f: PageFacts, _t: Thresholds) -> Evidence:
    skips = [f"h{a} -> h{b}" for a, b in f.heading_skips]
    return {"skips": skips[:SAMPLE]} if skips else None


def _thin(f: PageFacts, t: Thresholds) -> Evidence:
    return {"words": f.words} if f.words < t.thin_content_words else None


def _ratio(f: PageFacts, t: Thresholds) -> Evidence:
    if not f.html_chars:
        return None
    percent = 100 * f.text_chars / f.html_chars
    low = percent < t.text_ratio_min_percent
    return {"text_percent": round(percent, 1), "html_chars": f.html_chars} if low else None


def _alt_long(f: PageFacts, t: Thresholds) -> Evidence:
    long = [i.src for i in f.images if i.alt and len(i.alt.strip()) > t.img_alt_max_chars]
    return {"images": long[:SAMPLE]} if long else None


def _dom(f: PageFacts, t: Thresholds) -> Evidence:
    return {"elements": f.elements} if f.elements > t.dom_max_nodes else None


def _lang_invalid(f: PageFacts, _t: Thresholds) -> Evidence:
    return {"lang": f.lang} if f.lang and not valid_language(f.lang) else None


_OPEN_GRAPH = ("og:title", "og:description", "og:image")


def _open_graph(f: PageFacts, _t: Thresholds) -> Evidence:
    absent = [p for p in _OPEN_GRAPH if p not in f.open_graph]
    return {"missing": absent} if absent else None


def _json_ld_problems(value: Any) -> list[str]:
    """What a parsed JSON-LD block lacks: @context at the top, @type on each node."""
    problems = []
    for node in value if isinstance(value, list) else [value]:
        if not isinstance(node, dict):
            problems.append("not an object")
            continue
        if "@context" not in node:
            problems.append("no @context")
        graph = node.get("@graph")
        nodes = graph if isinstance(graph, list) else [node]
        if any(not isinstance(n, dict) or "@type" not in n for n in nodes):
            problems.append("a node without @type")
    return problems


def _json_ld(f: PageFacts, _t: Thresholds) -> Evidence:
    bad = f.invalid_json_ld()
    return {"blocks": bad} if bad else None


def _json_ld_incomplete(f: PageFacts, _t: Thresholds) -> Evidence:
    good, _bad = f.json_ld_values()
    problems = sorted({p for value in good for p in _json_ld_problems(value)})
    return {"problems": problems} if problems else None


def _refresh(f: PageFacts, _t: Thresholds) -> Evidence:
    return {"content": f.meta_refresh} if f.meta_refresh is not None else None


def _flag(name: str, test: Any) -> Any:
    def rule(f: PageFacts, _t: Thresholds) -> Evidence:
        return {name: True} if test(f) else None

    return rule


RULES: Rules = [
    (
        Check("title_missing", E, "No <title>, or an empty one."),
        html(missing("title", lambda f: f.title)),
    ),
    (
        Check("title_too_long", W, "The title is longer than the threshold.", "title_max_chars"),
        html(_title_long),
    ),
    (
        Check("title_too_short", N, "The title is shorter than the threshold.", "title_min_chars"),
        html(_title_short),
    ),
    (
        Check("title_multiple", W, "More than one <title>."),
        html(listed("titles", lambda f: f.titles, 2)),
    ),
    (Check("title_same_as_h1", N, "The title and the <h1> say the same."), html(_title_is_h1)),
    (
        Check("title_same_as_description", N, "The title and the meta description say the same."),
        html(_title_is_description),
    ),
    (
        Check("meta_description_missing", W, "No meta description, or an empty one."),
        html(missing("description", lambda f: f.description)),
    ),
    (
        Check(
            "meta_description_too_long",
            N,
            "The meta description is longer than the threshold.",
            "description_max_chars",
        ),
        html(_description_long),
    ),
    (
        Check(
            "meta_description_too_short",
            N,
            "The meta description is shorter than the threshold.",
            "description_min_chars",
        ),
        html(_description_short),
    ),
    (
        Check("meta_description_multiple", W, "More than one meta description."),
        html(listed("descriptions", lambda f: f.descriptions, 2)),
    ),
    (Check("h1_missing", W, "No <h1>."), html(missing("h1", lambda f: f.h1))),
    (Check("h1_multiple", N, "More than one <h1>."), html(listed("h1", lambda f: f.h1, 2))),
    (Check("h1_empty", W, "An <h1> without text."), html(_h1_empty)),
    (
        Check("h1_too_long", N, "An <h1> longer than the threshold.", "h1_max_chars"),
        html(_h1_long),
    ),
    (Check("h2_missing", N, "An <h1> but no <h2>: the text has no sections."), html(_h2_missing)),
    (
        Check("headings_out_of_order", N, "A heading more than one level below the one before."),
        html(_skips),
    ),
    (
        Check("thin_content", N, "Fewer words than the threshold.", "thin_content_words"),
        html(_thin),
    ),
    (
        Check(
            "low_text_ratio",
            N,
            "Visible text is a smaller share of the HTML than the threshold (percent).",
            "text_ratio_min_percent",
        ),
        html(_ratio),
    ),
    (
        Check("placeholder_text", W, "The text has placeholder copy (lorem ipsum)."),
        html(_flag("lorem_ipsum", lambda f: f.placeholder)),
    ),
    (
        Check("dom_too_large", N, "More HTML elements than the threshold.", "dom_max_nodes"),
        html(_dom),
    ),
    (
        Check("img_alt_missing", W, "Images without alt text."),
        html(listed("images", lambda f: f.images_without_alt)),
    ),
    (
        Check("img_alt_too_long", N, "Alt text longer than the threshold.", "img_alt_max_chars"),
        html(_alt_long),
    ),
    (
        Check("img_size_missing", N, "Images without width and height (the layout shifts)."),
        html(listed("images", lambda f: [i.src for i in f.images if not i.sized])),
    ),
    (
        Check("lang_missing", N, "No lang attribute on <html>."),
        html(missing("lang", lambda f: f.lang)),
    ),
    (
        Check("lang_invalid", W, "The <html> lang is not a language code (ISO 639-1, region)."),
        html(_lang_invalid),
    ),
    (
        Check("viewport_missing", W, "No meta viewport (not mobile-friendly)."),
        html(missing("viewport", lambda f: f.viewport)),
    ),
    (
        Check("viewport_multiple", N, "More than one meta viewport."),
        html(_flag("viewports", lambda f: f.viewports > 1)),
    ),
    (
        Check("doctype_missing", N, "No <!doctype html>: browsers render in quirks mode."),
        html(missing("doctype", lambda f: f.doctype)),
    ),
    (
        Check("favicon_missing", N, "No <link rel=icon>."),
        html(missing("favicon", lambda f: f.favicon)),
    ),
    (Check("meta_refresh", W, "A meta refresh (redirect or reload)."), html(_refresh)),
    (
        Check("meta_keywords", N, "A meta keywords tag (ignored by search engines)."),
        html(_flag("meta_keywords", lambda f: f.meta_keywords)),
    ),
    (
        Check("head_element_in_body", W, "Head metadata (title, meta, canonical) in the body."),
        html(listed("elements", lambda f: f.head_in_body)),
    ),
    (
        Check("open_graph_missing", N, "No og:title, og:description or og:image (link previews)."),
        html(_open_graph),
    ),
    (
        Check("twitter_card_missing", N, "No twitter:card meta tag."),
        html(missing("twitter_card", lambda f: f.twitter_card)),
    ),
    (Check("structured_data_invalid", E, "A JSON-LD block does not parse."), html(_json_ld)),
    (
        Check(
            "structured_data_incomplete",
            W,
            "A JSON-LD block without @context, or a node without @type.",
        ),
        html(_json_ld_incomplete),
    ),
    (
        Check("deprecated_html", N, "Obsolete presentational elements (<font>, <center>, …)."),
        html(listed("elements", lambda f: f.deprecated)),
    ),
    (
        Check("plugin_content", N, "<object>, <embed> or <applet>: content crawlers cannot read."),
        html(listed("elements", lambda f: f.plugins)),
    ),
    (
        Check("iframe_present", N, "Content in iframes (indexed as the framed page's, not this)."),
        html(listed("iframes", lambda f: f.iframes)),
    ),
]
