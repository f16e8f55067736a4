"""What an audit reads from one HTML page: head fields, headings, links, images, text.

The whole document is read (the fetcher caps its size): an audit needs the body too (links,
images, words), not only the head that ``seojobs.fetch.html`` stops at. It is the crawl's hot
path, so the tokenizing and the tree building are done in C: the page is parsed once by
Lexbor (``selectolax.lexbor``), which implements the WHATWG HTML parsing algorithm as
browsers do, with scripting on as in Googlebot's Chromium (a ``<noscript>`` holds text, so a
tracking pixel in one does not end the head). One walk over the elements in document order
then reads the facts, with a dictionary lookup per element and the attributes read only on
the elements that matter; texts are read by Lexbor (``text_lexbor()``, the DOM's
textContent). The rules in ``checks`` decide what the facts mean.

The facts are the DOM's, as a browser builds it, not the markup's as written: an element that
does not belong in ``<head>`` ends it, and the metadata after it is the body's; an ``<h1>``
left open is closed by the next heading, and an ``<a>`` left open is opened again in the next
paragraph (a second link); a ``<title>`` holds text, never elements; what a
``<template>`` or a ``<noscript>`` holds is not on the page; a doctype counts only where it
sets the mode (before the document's first element); implied ``<html>``, ``<head>`` and
``<body>`` are elements. Three facts are about the markup itself and are read from it
(``_markup_facts``): how many ``<head>`` and ``<body>`` start tags were written (a browser
merges the extra ones away) and which element ended ``<head>`` early.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, LexborNode

from seojobs import outside
from seojobs.kinds.site_audit.structured import Items, has_items, parse_items

# Elements whose text is not the page's visible text.
_SKIP_TEXT = ["script", "style", "noscript", "template", "title"]
_WORD = re.compile(r"\w+")
# In ASCII text the runs of \w are the runs of [A-Za-z0-9_]: with each of those bytes made
# "a" and every other one a space, bytes.count() finds where runs start, with no object a
# word (the regular expression's findall took ~5x as long, bytes.split() ~2x).
_ASCII_WORD_BYTES = bytes(97 if chr(c).isalnum() or c == ord("_") else 32 for c in range(128))
_ASCII_WORD_BYTES += b" " * 128
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# Presentational elements HTML5 made obsolete.
DEPRECATED = frozenset(
    {"font", "center", "marquee", "blink", "big", "strike", "tt", "frame", "frameset", "basefont"}
)
PLUGINS = frozenset({"object", "embed", "applet"})
# Head metadata a parser drops (or search engines ignore) once it is in the body.
_HEAD_NAMES = frozenset({"description", "robots", "googlebot", "viewport"})

# Bounds for hostile pages (the fetcher caps their size); what lies past one is dropped, never
# raised on. A title's, a heading's or a link's text is cut at MAX_TEXT characters; the walk
# takes at most MAX_STEPS steps up from an element or into a link (is this <title> an SVG's,
# is this image inside that link); and a page nested so deep that the parser's work would
# grow with the square of its size is read up to where it gets there (``_bounded``).
MAX_TEXT = 1000
MAX_STEPS = 200_000
MAX_TAGS_UNCHECKED = 10_000
MAX_NESTING_WORK = 50_000_000


@dataclass(slots=True)
class Link:
    href: str  # as written
    nofollow: bool
    text: str | None = None  # visible text, image alt or aria-label
    blank_unsafe: bool = False  # target=_blank without rel=noopener or noreferrer


@dataclass(frozen=True, slots=True)
class Image:
    src: str
    alt: str | None  # None: no alt attribute
    sized: bool  # both width and height are set


_LOADS = frozenset(("script", "source", "video", "audio", "track", "input"))
# What belongs in <head>; any other element there ends it early in a browser (and what
# follows it, metadata too, is the body's).
_HEAD_ELEMENTS = frozenset(
    {"title", "meta", "link", "script", "style", "noscript", "base", "template", "head", "html"}
)


@dataclass
class PageFacts:
    titles: list[str] = field(default_factory=list)
    descriptions: list[str] = field(default_factory=list)
    h1: list[str] = field(default_factory=list)
    h2: int = 0
    h2_texts: list[str] = field(default_factory=list)
    first_heading: int = 0  # the level of the page's first heading; 0: none
    # (level, next level) where a heading goes more than one level deeper than the last one.
    heading_skips: list[tuple[int, int]] = field(default_factory=list)
    canonicals: list[str] = field(default_factory=list)
    hreflang: list[tuple[str, str]] = field(default_factory=list)  # (language, href)
    robots_meta: list[tuple[str, str]] = field(default_factory=list)
    lang: str | None = None
    viewports: int = 0
    viewport_content: str | None = None  # the first meta viewport's
    charset: bool = False  # <meta charset> or its http-equiv form
    charsets: list[str] = field(default_factory=list)  # the charsets meta tags name
    heads: int = 0  # <head> start tags, as written
    bodies: int = 0  # <body> start tags, as written
    head_invalid: list[str] = field(default_factory=list)  # the element that ended <head>
    amp: bool = False  # <html amp> or <html ⚡>
    amp_boilerplate: bool = False  # <style amp-boilerplate>
    amp_runtime: bool = False  # the AMP runtime script (cdn.ampproject.org/v0.js)
    hreflang_in_body: int = 0  # hreflang links in <body>: search engines ignore them
    inline_script_chars: int = 0  # inline <script> (not JSON-LD) content
    inline_style_chars: int = 0  # <style> content
    blocking_scripts: list[str] = field(default_factory=list)  # head scripts without async
    doctype: bool = False
    favicon: bool = False
    meta_refresh: str | None = None  # its content
    meta_keywords: bool = False
    open_graph: dict[str, str] = field(default_factory=dict)  # og: property -> first content
    twitter_card: str | None = None  # its content
    head_in_body: list[str] = field(default_factory=list)  # head elements in <body>
    base_href: str | None = None  # the first <base>'s href, as written; None: no such <base>
    links: list[Link] = field(default_factory=list)
    # Anchors a crawler cannot follow: no href, ``javascript:``, empty.
    non_crawlable: list[str] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    forms: list[str] = field(default_factory=list)  # each form's action, as written
    iframes: list[str] = field(default_factory=list)
    # What else the page loads, as written: scripts, stylesheets, media and embeds.
    subresources: list[str] = field(default_factory=list)
    # <link rel=next|prev>: (rel, href), as written.
    pagination: list[tuple[str, str]] = field(default_factory=list)
    deprecated: list[str] = field(default_factory=list)  # obsolete elements, each once
    plugins: list[str] = field(default_factory=list)  # <object>, <embed>, <applet>
    json_ld: list[str] = field(default_factory=list)
    items: Items | None = None  # microdata and RDFa; None: the page has neither
    elements: int = 0  # in the DOM (implied <html>, <head> and <body> too)
    words: int = 0
    text_chars: int = 0
    html_chars: int = 0
    placeholder: bool = False  # "lorem ipsum" in the text
    text_hash: str = ""

    @property
    def title(self) -> str | None:
        return self.titles[0] if self.titles else None

    @property
    def description(self) -> str | None:
        return self.descriptions[0] if self.descriptions else None

    @property
    def viewport(self) -> bool:
        return self.viewports > 0

    @property
    def images_without_alt(self) -> list[str]:
        return [image.src for image in self.images if not (image.alt or "").strip()]

    def json_ld_values(self) -> tuple[list[object], list[str]]:
        """(the blocks that parse, the first 100 characters of each that does not)."""
        good, bad = [], []
        for block in self.json_ld:
            try:
                good.append(outside.loads(block))
            except ValueError:
                bad.append(block.strip()[:100])
        return good, bad

    def invalid_json_ld(self) -> list[str]:
        """The JSON-LD blocks that do not parse, each as its first 100 characters."""
        return self.json_ld_values()[1]


def _attrs(node: LexborNode) -> dict[str, str]:
    """The element's attributes; a name without a value has the value "" (as written
    ``<img alt>``). Lexbor keeps the first of a duplicate, as browsers do."""
    found = node.attributes
    if None in found.values():
        return {name: value or "" for name, value in found.items()}
    return found  # type: ignore[return-value]  # no None among them


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def _short(text: str) -> str:
    """An element's text (a title, a heading, a link's), squeezed and cut at ``MAX_TEXT``."""
    if len(text) > 4 * MAX_TEXT:
        text = text[: 4 * MAX_TEXT]
    return _squeezed(text)[:MAX_TEXT]


class _Reader:
    """One walk over a parsed page's elements, in document order."""

    def __init__(self) -> None:
        self.facts = PageFacts()
        self.body = False  # past the <body> element: what follows is in it
        self.heading = 0  # the last heading's level
        self.anchor: tuple[int, Link, LexborNode, str] | None = None  # the last link's
        self.pictured: list[tuple[Link, LexborNode, str]] = []  # links with images inside
        self.steps = MAX_STEPS  # what is left of the page's budget of steps up or into trees

    def walk(self, root: LexborNode) -> None:
        handlers = _HANDLERS
        for node in root.traverse():
            handler = handlers.get(node.tag)  # type: ignore[arg-type]
            if handler is not None:
                handler(self, node)
        for link, node, label in self.pictured:
            link.text = self.pictured_text(node, label)

    def within(self, node: LexborNode, ancestor: int | None, stop: str) -> bool:
        """Whether ``node`` lies inside the element whose ``mem_id`` is ``ancestor`` (with
        None: inside any element named ``stop``). The search ends at the first ``stop``
        element, at <body> or <head>, or when the budget is spent."""
        parent = node.parent
        while parent is not None and self.steps > 0:
            self.steps -= 1
            if ancestor is not None and parent.mem_id == ancestor:
                return True
            tag = parent.tag
            if tag == stop:
                return ancestor is None
            if tag in _STOPS:
                return False
            parent = parent.parent
        return False

    def pictured_text(self, anchor: LexborNode, label: str) -> str:
        """A link's text where images inside it speak too: their alt text, in its place."""
        pieces = [f"{label} "]
        for node in anchor.traverse(include_text=True):
            self.steps -= 1
            if self.steps < 0:
                break
            if node.is_text_node:
                pieces.append(node.text_content or "")
            elif node.tag == "img" and node.attributes.get("alt"):
                pieces.append(f" {node.attributes['alt']} ")
        return _short("".join(pieces))

    def body_start(self, _node: LexborNode) -> None:
        self.body = True

    def html(self, node: LexborNode) -> None:
        a = _attrs(node)
        if a.get("lang", "").strip():
            self.facts.lang = a["lang"].strip()
        self.facts.amp = "amp" in a or "\u26a1" in a

    def base(self, node: LexborNode) -> None:
        """The first <base> with an href sets the page's base, an empty href too (the page's
        own URL: a later <base> is then ignored, as browsers do)."""
        a = node.attributes
        if self.facts.base_href is None and "href" in a:
            self.facts.base_href = (a["href"] or "").strip()

    def title(self, node: LexborNode) -> None:
        if self.within(node, None, "svg"):  # an SVG's <title> names the drawing, not the page
            return
        self.facts.titles.append(_short(node.text_lexbor()))
        if self.body:
            self.facts.head_in_body.append("title")

    def heading_start(self, node: LexborNode) -> None:
        facts = self.facts
        level = _HEADINGS[node.tag]  # type: ignore[index]
        if not facts.first_heading:
            facts.first_heading = level
        if self.heading and level > self.heading + 1:
            facts.heading_skips.append((self.heading, level))
        self.heading = level
        if level == 1:
            facts.h1.append(_short(node.text_lexbor()))
        elif level == 2:
            facts.h2 += 1
            facts.h2_texts.append(_short(node.text_lexbor()))

    def script(self, node: LexborNode) -> None:
        a = _attrs(node)
        facts = self.facts
        if a.get("type", "").strip().lower() == "application/ld+json":
            facts.json_ld.append(node.text())
            return
        src = a.get("src", "").strip()
        if not a.get("src"):
            facts.inline_script_chars += len(node.text())
        if not src:
            return
        if "cdn.ampproject.org/v0" in src:
            facts.amp_runtime = True
        blocking = not ({"async", "defer"} & a.keys()) and a.get("type", "") != "module"
        if not self.body and blocking:
            facts.blocking_scripts.append(src)
        facts.subresources.append(src)

    def style(self, node: LexborNode) -> None:
        if "amp-boilerplate" in node.attributes:
            self.facts.amp_boilerplate = True
        self.facts.inline_style_chars += len(node.text())

    def anchor_start(self, node: LexborNode) -> None:
        a = node.attributes
        href = (a.get("href") or "").strip()
        if not href or href[:11].lower() == "javascript:":
            self.facts.non_crawlable.append(href or "(no href)")
            return
        if href.startswith(_NOT_PAGES):
            return
        rel = a.get("rel")
        rels = rel.lower().split() if rel else ()
        target = a.get("target")
        blank = target is not None and target.strip().lower() == "_blank"
        unsafe = blank and not ("noopener" in rels or "noreferrer" in rels)
        label = (a.get("aria-label") or "").strip() or (a.get("title") or "").strip()
        text = node.text_lexbor()
        text = _short(f"{label} {text}") if label else _short(text)
        link = Link(href, "nofollow" in rels, text, unsafe)
        self.facts.links.append(link)
        self.anchor = (node.mem_id, link, node, label)

    def image(self, node: LexborNode) -> None:
        a = node.attributes
        alt = (a["alt"] or "") if "alt" in a else None
        sized = bool((a.get("width") or "").strip() and (a.get("height") or "").strip())
        self.facts.images.append(Image((a.get("src") or "").strip(), alt, sized))
        if alt and self.anchor is not None and self.within(node, self.anchor[0], "a"):
            _id, link, anchor, label = self.anchor
            if not self.pictured or self.pictured[-1][0] is not link:
                self.pictured.append((link, anchor, label))

    def link(self, node: LexborNode) -> None:
        facts = self.facts
        a = _attrs(node)
        rels = a.get("rel", "").lower().split()
        href = a.get("href", "").strip()
        if "canonical" in rels:
            facts.canonicals.append(href)
            if self.body:
                facts.head_in_body.append("link rel=canonical")
        elif "alternate" in rels and a.get("hreflang", "").strip() and href:
            facts.hreflang.append((a["hreflang"].strip().lower(), href))
            facts.hreflang_in_body += self.body
        elif "icon" in rels:
            facts.favicon = True
        elif "stylesheet" in rels and href:
            facts.subresources.append(href)
        if href and ("next" in rels or "prev" in rels or "previous" in rels):
            facts.pagination.append(("next" if "next" in rels else "prev", href))

    def meta(self, node: LexborNode) -> None:
        facts = self.facts
        a = _attrs(node)
        name = a.get("name", "").strip().lower()
        if name == "description":
            facts.descriptions.append(a.get("content", "").strip())
        elif name == "viewport":
            facts.viewports += 1
            if facts.viewport_content is None:
                facts.viewport_content = a.get("content", "")
        elif name in ("robots", "googlebot") and "content" in a:
            facts.robots_meta.append((name, a["content"]))
        elif name == "keywords":
            facts.meta_keywords = True
        elif name == "twitter:card" and facts.twitter_card is None:
            facts.twitter_card = a.get("content", "").strip()
        _meta_other(facts, a)
        if self.body and (name in _HEAD_NAMES or "http-equiv" in a or "charset" in a):
            facts.head_in_body.append(
                f"meta {name or ('http-equiv' if 'http-equiv' in a else 'charset')}"
            )

    def form(self, node: LexborNode) -> None:
        self.facts.forms.append((node.attributes.get("action") or "").strip())

    def iframe(self, node: LexborNode) -> None:
        self.facts.iframes.append((node.attributes.get("src") or "").strip())

    def load(self, node: LexborNode) -> None:
        src = (node.attributes.get("src") or "").strip()
        if src:
            self.facts.subresources.append(src)

    def deprecated(self, node: LexborNode) -> None:
        tag = node.tag
        if tag not in self.facts.deprecated:
            self.facts.deprecated.append(tag)  # type: ignore[arg-type]

    def plugin(self, node: LexborNode) -> None:
        self.facts.plugins.append(node.tag)  # type: ignore[arg-type]


def _meta_other(facts: PageFacts, a: dict[str, str]) -> None:
    prop = a.get("property", "").strip().lower()
    equiv = a.get("http-equiv", "").strip().lower()
    if prop.startswith("og:"):
        facts.open_graph.setdefault(prop, a.get("content", "").strip())
    elif "charset" in a or (equiv == "content-type" and "charset" in a.get("content", "")):
        facts.charset = True
        named = a.get("charset") or a.get("content", "").lower().partition("charset=")[2]
        facts.charsets.append(named.strip().lower())
    elif equiv == "refresh" and facts.meta_refresh is None:
        facts.meta_refresh = a.get("content", "").strip()


_HANDLERS: dict[str, Callable[[_Reader, LexborNode], None]] = {
    "a": _Reader.anchor_start,
    "img": _Reader.image,
    **dict.fromkeys(_HEADINGS, _Reader.heading_start),
    "meta": _Reader.meta,
    "link": _Reader.link,
    "script": _Reader.script,
    "style": _Reader.style,
    "title": _Reader.title,
    "body": _Reader.body_start,
    "html": _Reader.html,
    "base": _Reader.base,
    "form": _Reader.form,
    "iframe": _Reader.iframe,
    **dict.fromkeys(_LOADS - {"script"}, _Reader.load),
    **dict.fromkeys(DEPRECATED, _Reader.deprecated),
    **dict.fromkeys(PLUGINS, _Reader.plugin),
}
_STOPS = frozenset({"body", "head", "html"})
_NOT_PAGES = ("#", "mailto:", "tel:", "data:")


def count_words(text: str) -> int:
    """How many runs of word characters (``\\w+``) ``text`` holds."""
    if text.isascii():
        # Every word character made "a", every other one a space: a run starts at each " a".
        marked = text.encode().translate(_ASCII_WORD_BYTES)
        return marked.count(b" a") + marked.startswith(b"a")
    return len(_WORD.findall(text))


# Whitespace to str.split() in ASCII text, besides the space.
_ASCII_SPACES = ("\t", "\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x1f", "  ")


def _visible_text(tree: LexborHTMLParser) -> str:
    """The page's visible text, its whitespace squeezed: its text nodes, less those of the
    elements that show none, joined by spaces (``<li>a</li><li>b</li>`` is two words)."""
    tree.strip_tags(_SKIP_TEXT, recursive=True)
    if tree.root is None:
        return ""
    text = tree.root.text(separator=" ", strip=True, skip_empty=True)
    # Each piece is stripped: most pages' text needs no more (a split and join of some
    # thousand words is the costliest step here).
    if text.isascii() and not any(space in text for space in _ASCII_SPACES):
        return text
    return _squeezed(text)


# -- facts of the markup as written -------------------------------------------------------------

# Where the head ends as written: its end tag, or the body's start tag.
_HEAD_END = re.compile(r"</head[\s/>]|<body[\s/>]", re.IGNORECASE)
_START_TAG = re.compile(r"<([a-zA-Z][^\s/>]*)")
_HEAD_BODY_TAG = re.compile(r"<(head|body)[\s/>]", re.IGNORECASE)
# Where a browser's tokenizer reads markup as text: what they hold is no tag.
_RAW_TEXT = ["script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes"]
_RAW_TEXT += ["noscript"]


def _markup_facts(html: str, tree: LexborHTMLParser, facts: PageFacts) -> None:
    """The <head> and <body> start tags written, and the element that ended <head> early.

    A browser's DOM keeps neither (it merges a second <head> or <body> away, and an element
    that ends the head early looks like the body's first one), so they are read from the
    markup: a pattern finds the candidates, and the rare page where it finds one is read
    again to rule out those a browser reads as text (comments, scripts and the like)."""
    tags = [tag.lower() for tag in _HEAD_BODY_TAG.findall(html)]
    facts.heads = tags.count("head")
    facts.bodies = len(tags) - facts.heads
    if facts.heads > 1 or facts.bodies > 1:
        facts.heads, facts.bodies = _written(tree, facts.heads, facts.bodies)
    end = _HEAD_END.search(html)
    if end is None:
        return
    written = _START_TAG.findall(html, 0, end.start())
    if all(name.lower() in _HEAD_ELEMENTS for name in written):
        return
    # Something that is no head element before the head's end as written: what the head's
    # markup alone makes of it says whether it ended the head (not if it sat in a comment,
    # a script or a <noscript>).
    head = LexborHTMLParser(html[: end.start()], scripting=True).body
    first = next((node for node in head.iter() if node.is_element_node), None) if head else None
    if first is not None and first.tag:
        facts.head_invalid.append(first.tag)


def _written(tree: LexborHTMLParser, heads: int, bodies: int) -> tuple[int, int]:
    """The <head> and <body> tags found in the markup, less those inside comments and raw
    text."""
    texts = [node.text() for name in _RAW_TEXT for node in tree.tags(name)]
    if tree.root is not None:
        texts += [
            node.comment_content or ""
            for node in tree.root.parent.traverse(include_text=True)  # type: ignore[union-attr]
            if node.is_comment_node
        ]
    for text in texts:
        for tag in _HEAD_BODY_TAG.findall(text):
            if tag.lower() == "head":
                heads -= 1
            else:
                bodies -= 1
    return heads, bodies


# -- nesting ------------------------------------------------------------------------------------

_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)")
# Elements that never deepen the tree: void ones, and those a sibling of their kind closes.
_FLAT = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
    | {"track", "wbr", "param", "keygen", "html", "head", "body", "p", "li", "dt", "dd"}
    | {"option", "optgroup", "tr", "td", "th", "tbody", "thead", "tfoot", "rt", "rp"}
)


def _bounded(html: str) -> str:
    """``html`` up to where its nesting would cost the parser too much.

    An HTML parser looks down its stack of open elements for most tags (is a <p> or an <li>
    in scope?), so 100,000 nested <div>s take Lexbor seconds, and 2 MB of them minutes (a
    browser too would take its time). Pages of up to MAX_TAGS_UNCHECKED tags are read whole
    (at worst ~0.2 s); past that the tags' depths, estimated from the markup (it counts
    elements left open that a parser may close, such as a <font> in each table cell), are
    added up, and the page is cut where the sum passes MAX_NESTING_WORK (at worst ~0.5 s of
    parsing): a big page of ordinary depth (100,000 tags at depth 100) is read whole, one
    with some 10,000 elements left open is read up to there."""
    if html.count("<") <= MAX_TAGS_UNCHECKED:
        return html
    depth = work = 0
    for tag in _TAG.finditer(html):
        if tag[1]:
            depth = max(depth - 1, 0)
        elif tag[2].lower() not in _FLAT:
            depth += 1
        work += depth
        if work > MAX_NESTING_WORK:
            return html[: tag.start()]
    return html


# -- the page -----------------------------------------------------------------------------------


def parse_page(html: str) -> PageFacts:
    """Never raises, whatever the markup (Lexbor builds a tree from any input, as browsers
    do; the fetcher caps the page's size)."""
    size = len(html)
    html = _bounded(html)
    tree = LexborHTMLParser(html, scripting=True)
    reader = _Reader()
    facts = reader.facts
    root = tree.root
    if root is not None:
        reader.walk(root)
        document = root.parent
        facts.doctype = document is not None and any(
            node.tag == "-doctype" for node in document.iter(include_text=True)
        )
    facts.elements = len(tree.tags("*"))
    _markup_facts(html, tree, facts)
    if has_items(html):  # microdata, RDFa: a second, bounded pass on the pages that have them
        facts.items = parse_items(html)
    text = _visible_text(tree)  # last: it takes elements out of the tree
    facts.words = count_words(text)
    facts.text_chars = len(text)
    facts.html_chars = size
    facts.placeholder = "lorem ipsum" in text.lower()
    facts.text_hash = hashlib.sha256(text.encode()).hexdigest()[:32]
    return facts
