"""What an audit reads from one HTML page: head fields, headings, links, images, text.

The whole document is read (the fetcher caps its size): an audit needs the body too (links,
images, words), not only the head that ``seojobs.fetch.html`` stops at. It is the crawl's hot
path: one pass, and per element only a dictionary lookup or two; the rules in ``checks``
decide what the facts mean. The handlers are html.parser's; plain markup is fed to them by
``seojobs.fetch.html.scan`` (regular expressions, about half the CPU of html.parser's
tokenizer on bench/audit.py's pages, where it was the audit's biggest cost), anything else by
the stdlib parser from the start, so the facts are always the stdlib parser's
(tests/unit/test_site_audit_page.py reads both ways).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser

from seojobs import outside
from seojobs.fetch.html import scan
from seojobs.kinds.site_audit.structured import Items, has_items, parse_items

_SKIP_TEXT = frozenset({"script", "style", "noscript", "template", "title"})
_WORD = re.compile(r"\w+")
# In ASCII text the runs of \w are the runs of [A-Za-z0-9_]: with every other byte made a
# space, bytes.split() finds them ~5x faster than the regular expression (bench/audit.py).
_ASCII_WORD_BYTES = bytes(c if chr(c).isalnum() or c == ord("_") else 32 for c in range(128))
_ASCII_WORD_BYTES += b" " * 128
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# Presentational elements HTML5 made obsolete.
DEPRECATED = frozenset(
    {"font", "center", "marquee", "blink", "big", "strike", "tt", "frame", "frameset", "basefont"}
)
PLUGINS = frozenset({"object", "embed", "applet"})
# Head metadata a parser drops (or search engines ignore) once it is in the body.
_HEAD_NAMES = frozenset({"description", "robots", "googlebot", "viewport"})


@dataclass(slots=True)
class Link:
    href: str  # as written
    nofollow: bool
    text: str | None = None  # visible text, image alt or aria-label; None: never closed
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
    {"title", "meta", "link", "script", "style", "noscript", "base", "template", "head"}
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
    heads: int = 0  # <head> start tags
    bodies: int = 0  # <body> start tags
    head_invalid: list[str] = field(default_factory=list)  # elements that end <head> early
    amp: bool = False  # <html amp> or <html ⚡>
    amp_boilerplate: bool = False  # <style amp-boilerplate>
    amp_runtime: bool = False  # the AMP runtime script (cdn.ampproject.org/v0.js)
    hreflang_in_body: int = 0  # hreflang links after <body>: search engines ignore them
    inline_script_chars: int = 0  # inline <script> (not JSON-LD) content
    inline_style_chars: int = 0  # <style> content
    blocking_scripts: list[str] = field(default_factory=list)  # head scripts without async
    doctype: bool = False
    favicon: bool = False
    meta_refresh: str | None = None  # its content
    meta_keywords: bool = False
    open_graph: dict[str, str] = field(default_factory=dict)  # og: property -> first content
    twitter_card: str | None = None  # its content
    head_in_body: list[str] = field(default_factory=list)  # head elements after <body>
    base_href: str | None = None
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
    elements: int = 0
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


def _attrs(attrs: list[tuple[str, str | None]]) -> dict[str, str]:
    return {name: value or "" for name, value in reversed(attrs)}  # the first one wins


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.facts = PageFacts()
        self._open: list[str] = []  # elements whose text is collected: title, h1, a, ld+json
        self._buffers: dict[str, list[str]] = {}
        self._skip = 0
        self._svg = 0  # inside inline SVG, whose <title> names a drawing, not the page
        self._body = False
        self._heading = 0  # the last heading's level
        self._anchor: Link | None = None
        self._head = False  # inside <head>
        self._raw = ""  # "script" or "style": inside one whose content is counted
        self._text: list[str] = []
        self.done = False  # the scanner's stop flag: a page is read to its end

    def scanned_text(self, text: str) -> str:
        return unescape(text) if "&" in text else text  # as convert_charrefs does

    def handle_decl(self, decl: str) -> None:
        if decl.lower().startswith("doctype"):
            self.facts.doctype = True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = _attrs(attrs)
        if tag in _SKIP_TEXT:
            self._skip += 1
        if tag == "svg":
            self._svg += 1
        title = tag == "title" and not self._svg
        if title or tag in ("h1", "h2") or (tag == "script" and _is_json_ld(a)):
            self._collect(tag)
        elif tag == "style" or (tag == "script" and not a.get("src")):
            self._raw = tag
        self._element(tag, a)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, _attrs(attrs))

    def _collect(self, tag: str) -> None:
        self._open.append(tag)
        self._buffers[tag] = []

    def _element(self, tag: str, a: dict[str, str]) -> None:
        facts = self.facts
        facts.elements += 1
        if self._head and tag not in _HEAD_ELEMENTS and not self._skip:  # <noscript><img>
            self._head = False
            facts.head_invalid.append(tag)
        if tag == "a":
            self._anchor_start(a)
        elif tag == "img":
            self._image(a)
        elif tag in _HEADINGS:
            self._heading_start(_HEADINGS[tag])
        elif tag == "meta":
            self._meta(a)
        elif tag == "link":
            self._link(a)
        elif tag == "body":
            self._body = True
            facts.bodies += 1
        elif tag == "html":
            if a.get("lang", "").strip():
                facts.lang = a["lang"].strip()
            facts.amp = "amp" in a or "\u26a1" in a
        elif tag == "base" and facts.base_href is None and a.get("href", "").strip():
            facts.base_href = a["href"].strip()
        elif tag == "title" and self._body and not self._svg:
            facts.head_in_body.append("title")
        else:
            self._other(tag, a)

    def _other(self, tag: str, a: dict[str, str]) -> None:
        facts = self.facts
        if tag == "script" and a.get("src", "").strip():
            self._script(a)
        if tag == "head":
            facts.heads += 1
            self._head = not self._body
        elif tag == "style" and "amp-boilerplate" in a:
            facts.amp_boilerplate = True
        elif tag == "form":
            facts.forms.append(a.get("action", "").strip())
        elif tag == "iframe":
            facts.iframes.append(a.get("src", "").strip())
        elif tag in _LOADS and a.get("src", "").strip():
            facts.subresources.append(a["src"].strip())
        elif tag in DEPRECATED and tag not in facts.deprecated:
            facts.deprecated.append(tag)
        elif tag in PLUGINS:
            facts.plugins.append(tag)

    def _script(self, a: dict[str, str]) -> None:
        src = a["src"].strip()
        if "cdn.ampproject.org/v0" in src:
            self.facts.amp_runtime = True
        blocking = not ({"async", "defer"} & a.keys()) and a.get("type", "") != "module"
        if self._head and blocking:
            self.facts.blocking_scripts.append(src)

    def _heading_start(self, level: int) -> None:
        if not self.facts.first_heading:
            self.facts.first_heading = level
        if level == 2:
            self.facts.h2 += 1
        if self._heading and level > self._heading + 1:
            self.facts.heading_skips.append((self._heading, level))
        self._heading = level

    def _image(self, a: dict[str, str]) -> None:
        alt = a.get("alt")
        sized = bool(a.get("width", "").strip() and a.get("height", "").strip())
        self.facts.images.append(Image(a.get("src", "").strip(), alt, sized))
        if self._anchor is not None and alt:
            self._buffers["a"].append(f" {alt} ")

    def _link(self, a: dict[str, str]) -> None:
        rels = a.get("rel", "").lower().split()
        href = a.get("href", "").strip()
        if "canonical" in rels:
            self.facts.canonicals.append(href)
            if self._body:
                self.facts.head_in_body.append("link rel=canonical")
        elif "alternate" in rels and a.get("hreflang", "").strip() and href:
            self.facts.hreflang.append((a["hreflang"].strip().lower(), href))
            self.facts.hreflang_in_body += self._body
        elif "icon" in rels:
            self.facts.favicon = True
        elif "stylesheet" in rels and href:
            self.facts.subresources.append(href)
        if href and ("next" in rels or "prev" in rels or "previous" in rels):
            self.facts.pagination.append(("next" if "next" in rels else "prev", href))

    def _meta(self, a: dict[str, str]) -> None:
        facts = self.facts
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
        self._meta_other(a)
        if self._body and (name in _HEAD_NAMES or "http-equiv" in a or "charset" in a):
            facts.head_in_body.append(
                f"meta {name or ('http-equiv' if 'http-equiv' in a else 'charset')}"
            )

    def _meta_other(self, a: dict[str, str]) -> None:
        facts = self.facts
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

    def _anchor_start(self, a: dict[str, str]) -> None:
        if self._anchor is not None:  # an <a> inside an open one closes it (as browsers do)
            self.handle_endtag("a")
        href = a.get("href", "").strip()
        if not href or href.lower().startswith("javascript:"):
            self.facts.non_crawlable.append(href or "(no href)")
        elif not href.startswith(("#", "mailto:", "tel:", "data:")):
            rels = a.get("rel", "").lower().split()
            blank = a.get("target", "").strip().lower() == "_blank"
            unsafe = blank and not ("noopener" in rels or "noreferrer" in rels)
            self._anchor = Link(href, "nofollow" in rels, None, unsafe)
            self.facts.links.append(self._anchor)
            self._collect("a")
            label = a.get("aria-label", "").strip() or a.get("title", "").strip()
            if label:
                self._buffers["a"].append(f" {label} ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self._head = False
        if tag == self._raw:
            self._raw = ""
        if tag in _SKIP_TEXT and self._skip:
            self._skip -= 1
        if tag == "svg" and self._svg:
            self._svg -= 1
        if tag in self._buffers and tag in self._open:
            # The innermost one; what an unclosed element inside it holds is its text too.
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag)]
            self._close(tag, "".join(self._buffers.pop(tag)))

    def _close(self, tag: str, text: str) -> None:
        if tag == "script":
            self.facts.json_ld.append(text)
            return
        text = " ".join(text.split())
        if tag == "title":
            self.facts.titles.append(text)
        elif tag == "h1":
            self.facts.h1.append(text)
        elif tag == "h2":
            self.facts.h2_texts.append(text)
        elif self._anchor is not None:
            self._anchor.text = text
            self._anchor = None

    def handle_data(self, data: str) -> None:
        for name in self._open:
            self._buffers[name].append(data)
        if not self._skip:
            self._text.append(data)
        elif self._raw == "script":
            self.facts.inline_script_chars += len(data)
        elif self._raw == "style":
            self.facts.inline_style_chars += len(data)

    def finish(self, size: int) -> PageFacts:
        text = " ".join(" ".join(self._text).split())
        facts = self.facts
        facts.words = count_words(text)
        facts.text_chars = len(text)
        facts.html_chars = size
        facts.placeholder = "lorem ipsum" in text.lower()
        facts.text_hash = hashlib.sha256(text.encode()).hexdigest()[:32]
        return facts


def count_words(text: str) -> int:
    """How many runs of word characters (``\\w+``) ``text`` holds."""
    if text.isascii():
        return len(text.encode().translate(_ASCII_WORD_BYTES).split())
    return len(_WORD.findall(text))


def _is_json_ld(attrs: dict[str, str]) -> bool:
    return attrs.get("type", "").strip().lower() == "application/ld+json"


def parse_page(html: str) -> PageFacts:
    """Never raises, whatever the markup: what was read before a parser error still counts."""
    facts = _scanned(html)
    return facts if facts is not None else _parse_with_stdlib(html)


def _finish(parser: _PageParser, html: str) -> PageFacts:
    facts = parser.finish(len(html))
    if has_items(html):  # microdata, RDFa: a second, bounded pass on the pages that have them
        facts.items = parse_items(html)
    return facts


def _scanned(html: str) -> PageFacts | None:
    """The facts of plain markup, fed by the scanner (every element's attributes, as
    html.parser hands them over); None when the page is not plain markup."""
    parser = _PageParser()
    return _finish(parser, html) if scan(html, parser, None) else None


def _parse_with_stdlib(html: str) -> PageFacts:
    parser = _PageParser()
    # The stdlib parser has raised on odd markup in past releases.
    with contextlib.suppress(Exception):
        parser.feed(html)
        parser.close()
    return _finish(parser, html)
