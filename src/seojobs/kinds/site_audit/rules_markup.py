"""Page rules about the document itself: its <head> and <body> structure, the viewport and
charset it declares, second-level headings, images written inline or without a source,
social tags, AMP, and what its own bytes cost (inline scripts and styles, resources,
scripts that block rendering)."""

from __future__ import annotations

import re

from seojobs.kinds.site_audit.check import (
    SAMPLE,
    Check,
    Evidence,
    N,
    Rules,
    W,
    html,
    listed,
)
from seojobs.kinds.site_audit.page import PageFacts
from seojobs.kinds.site_audit.params import Thresholds

H2_MAX_CHARS = 70
INLINE_MAX_KB = 32  # inline scripts, or styles, over this: not cached, sent with every page
DATA_URI_MAX_KB = 10  # an image written into the HTML over this
MAX_RESOURCES = 100  # scripts, styles, images and media a page loads
TWITTER_CARDS = frozenset({"summary", "summary_large_image", "app", "player"})
# An alt text that is a file name: "IMG_0042.jpg", "photo-1.png".
_FILE_NAME = re.compile(r"^[\w.-]+\.(?:jpe?g|png|gif|webp|avif|svg|bmp|tiff?)$", re.IGNORECASE)
_MAX_SCALE = re.compile(r"maximum-scale\s*=\s*([0-9.]+)")


def _h2_long(f: PageFacts, _t: Thresholds) -> Evidence:
    long = [text for text in f.h2_texts if len(text) > H2_MAX_CHARS]
    return {"h2": long[0], "length": len(long[0])} if long else None


def _h1_not_first(f: PageFacts, _t: Thresholds) -> Evidence:
    late = f.h1 and f.first_heading not in (0, 1)
    return {"first_heading": f"h{f.first_heading}"} if late else None


def _viewport_width(f: PageFacts, _t: Thresholds) -> Evidence:
    content = f.viewport_content
    if content is None:
        return None  # viewport_missing
    ok = "width=device-width" in content.replace(" ", "").lower()
    return None if ok else {"viewport": content}


def _zoom_disabled(f: PageFacts, _t: Thresholds) -> Evidence:
    content = (f.viewport_content or "").replace(" ", "").lower()
    scale = _MAX_SCALE.search(content)
    try:
        low = scale is not None and float(scale.group(1)) < 2
    except ValueError:
        low = False
    blocked = "user-scalable=no" in content or "user-scalable=0" in content or low
    return {"viewport": f.viewport_content} if blocked else None


def _not_utf8(f: PageFacts, _t: Thresholds) -> Evidence:
    other = [c for c in f.charsets if c.replace("-", "").replace("_", "") not in ("utf8", "")]
    return {"charset": other[0]} if other else None


def _alt_file_name(f: PageFacts, _t: Thresholds) -> Evidence:
    named = [i.src for i in f.images if i.alt and _FILE_NAME.match(i.alt.strip())]
    return {"images": named[:SAMPLE]} if named else None


def _data_images(f: PageFacts, _t: Thresholds) -> Evidence:
    large = [
        {"bytes": len(i.src), "start": i.src[:40]}
        for i in f.images
        if i.src[:5].lower() == "data:" and len(i.src) > DATA_URI_MAX_KB * 1024
    ]
    return {"images": large[:SAMPLE]} if large else None


def _chars(name: str, value: int) -> Evidence:
    return {name: value} if value > INLINE_MAX_KB * 1024 else None


def _resources(f: PageFacts, _t: Thresholds) -> Evidence:
    count = len(f.subresources) + len(f.images)
    return {"resources": count} if count > MAX_RESOURCES else None


def _protocol_relative(f: PageFacts, _t: Thresholds) -> Evidence:
    hrefs = [*f.subresources, *(i.src for i in f.images), *f.iframes]
    relative = [h for h in hrefs if h.startswith("//")]
    return {"resources": list(dict.fromkeys(relative))[:SAMPLE]} if relative else None


def _og_image_relative(f: PageFacts, _t: Thresholds) -> Evidence:
    image = f.open_graph.get("og:image")
    absolute = (image or "").lower().startswith(("http://", "https://"))
    return {"og:image": image} if image and not absolute else None


def _twitter_card(f: PageFacts, _t: Thresholds) -> Evidence:
    card = f.twitter_card
    return {"twitter:card": card} if card and card.lower() not in TWITTER_CARDS else None


def _amp(test: str) -> Evidence:
    return {test: None}


RULES: Rules = [
    (
        Check("h1_not_first_heading", N, "Another heading comes before the page's <h1>."),
        html(_h1_not_first),
    ),
    (
        Check("h2_empty", N, "An <h2> without text."),
        html(listed("h2", lambda f: [t for t in f.h2_texts if not t])),
    ),
    (
        Check("h2_too_long", N, f"An <h2> longer than {H2_MAX_CHARS} characters."),
        html(_h2_long),
    ),
    (
        Check("img_src_empty", W, "An <img> without a src: browsers request the page itself."),
        html(listed("images", lambda f: [i.alt or "" for i in f.images if not i.src])),
    ),
    (
        Check("img_alt_file_name", N, "Alt text that is the image's file name."),
        html(_alt_file_name),
    ),
    (
        Check(
            "img_inline_large",
            N,
            f"An image written into the HTML as a data: URI over {DATA_URI_MAX_KB} KB.",
        ),
        html(_data_images),
    ),
    (
        Check("head_multiple", W, "More than one <head> element."),
        html(listed("heads", lambda f: ["head"] * f.heads, 2)),
    ),
    (
        Check("body_multiple", W, "More than one <body> element."),
        html(listed("bodies", lambda f: ["body"] * f.bodies, 2)),
    ),
    (
        Check(
            "head_invalid_element",
            W,
            "An element that does not belong in <head> ends it early: what follows is body.",
        ),
        html(listed("elements", lambda f: f.head_invalid)),
    ),
    (
        Check(
            "viewport_not_device_width",
            W,
            "The meta viewport does not set width=device-width (not responsive).",
        ),
        html(_viewport_width),
    ),
    (
        Check(
            "viewport_zoom_disabled",
            N,
            "The meta viewport stops zooming (user-scalable=no, maximum-scale under 2).",
        ),
        html(_zoom_disabled),
    ),
    (
        Check("charset_not_utf8", N, "The page declares a charset other than UTF-8."),
        html(_not_utf8),
    ),
    (
        Check(
            "protocol_relative_resource",
            N,
            "Resources loaded by protocol-relative URLs (//host/...), over http on http pages.",
        ),
        html(_protocol_relative),
    ),
    (
        Check(
            "link_target_blank_unsafe",
            N,
            'Links opening a new tab (target=_blank) without rel="noopener" or "noreferrer".',
        ),
        html(listed("links", lambda f: [link.href for link in f.links if link.blank_unsafe])),
    ),
    (
        Check("og_image_relative", N, "og:image is not an absolute URL (previews drop it)."),
        html(_og_image_relative),
    ),
    (
        Check(
            "twitter_card_invalid",
            W,
            "twitter:card is not summary, summary_large_image, app or player.",
        ),
        html(_twitter_card),
    ),
    (
        Check("amp_canonical_missing", W, "An AMP page without a rel=canonical link."),
        html(lambda f, _t: _amp("canonical") if f.amp and not f.canonicals else None),
    ),
    (
        Check("amp_boilerplate_missing", W, "An AMP page without <style amp-boilerplate>."),
        html(lambda f, _t: _amp("amp-boilerplate") if f.amp and not f.amp_boilerplate else None),
    ),
    (
        Check(
            "amp_runtime_missing",
            W,
            "An AMP page that does not load the AMP runtime (cdn.ampproject.org/v0.js).",
        ),
        html(lambda f, _t: _amp("runtime") if f.amp and not f.amp_runtime else None),
    ),
    (
        Check(
            "inline_script_large",
            N,
            f"Inline scripts over {INLINE_MAX_KB} KB: sent again with every page, never cached.",
        ),
        html(lambda f, _t: _chars("inline_script_chars", f.inline_script_chars)),
    ),
    (
        Check(
            "inline_css_large",
            N,
            f"Inline styles over {INLINE_MAX_KB} KB: sent again with every page, never cached.",
        ),
        html(lambda f, _t: _chars("inline_style_chars", f.inline_style_chars)),
    ),
    (
        Check(
            "too_many_resources",
            N,
            f"The page loads more than {MAX_RESOURCES} scripts, styles, images and media.",
        ),
        html(_resources),
    ),
    (
        Check(
            "render_blocking_script",
            N,
            "Scripts in <head> without async or defer: rendering waits for each.",
        ),
        html(listed("scripts", lambda f: f.blocking_scripts)),
    ),
]
