"""What an audit reads from one HTML page: head fields, headings, links, images, text.

The whole document is read (the fetcher caps its size): an audit needs the body too (links,
images, words), not only the head that ``seojobs.fetch.html`` stops at. The handlers are
html.parser's; plain markup is fed to them by ``seojobs.fetch.html.scan`` (regular
expressions, ~3x less CPU on bench/audit.py's pages, where html.parser was the audit's
biggest cost), anything else by the stdlib parser from the start, so the facts are always
the stdlib parser's (tests/unit/test_site_audit_page.py reads both ways).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser

from seojobs.fetch.html import scan

_SKIP_TEXT = frozenset({"script", "style", "noscript", "template", "title"})
# The elements whose attributes the handlers read (the scanner parses no other's).
_READ_ATTRIBUTES = frozenset({"html", "meta", "link", "base", "a", "img", "script"})
_WORD = re.compile(r"\w+")
# In ASCII text the runs of \w are the runs of [A-Za-z0-9_]: with every other byte made a
# space, bytes.split() finds them ~5x faster than the regular expression (bench/audit.py).
_ASCII_WORD_BYTES = bytes(c if chr(c).isalnum() or c == ord("_") else 32 for c in range(128))
_ASCII_WORD_BYTES += b" " * 128


@dataclass(frozen=True)
class Link:
    href: str  # as written
    nofollow: bool


@dataclass
class PageFacts:
    titles: list[str] = field(default_factory=list)
    descriptions: list[str] = field(default_factory=list)
    h1: list[str] = field(default_factory=list)
    canonicals: list[str] = field(default_factory=list)
    hreflang: list[tuple[str, str]] = field(default_factory=list)  # (language, href)
    robots_meta: list[tuple[str, str]] = field(default_factory=list)
    lang: str | None = None
    viewport: bool = False
    base_href: str | None = None
    links: list[Link] = field(default_factory=list)
    # Anchors a crawler cannot follow: no href, ``javascript:``, empty.
    non_crawlable: list[str] = field(default_factory=list)
    images_without_alt: list[str] = field(default_factory=list)
    json_ld: list[str] = field(default_factory=list)
    words: int = 0
    text_hash: str = ""

    @property
    def title(self) -> str | None:
        return self.titles[0] if self.titles else None

    @property
    def description(self) -> str | None:
        return self.descriptions[0] if self.descriptions else None

    def invalid_json_ld(self) -> list[str]:
        """The JSON-LD blocks that do not parse, each as its first 100 characters."""
        bad = []
        for block in self.json_ld:
            try:
                json.loads(block)
            except ValueError:
                bad.append(block.strip()[:100])
        return bad


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.facts = PageFacts()
        self._open: list[str] = []  # elements whose text is collected: title, h1, ld+json
        self._buffers: dict[str, list[str]] = {}
        self._skip = 0
        self._text: list[str] = []
        self.done = False  # the scanner's stop flag: a page is read to its end

    def scanned_text(self, text: str) -> str:
        return unescape(text) if "&" in text else text  # as convert_charrefs does

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {name: value or "" for name, value in reversed(attrs)}  # the first one wins
        if tag in _SKIP_TEXT:
            self._skip += 1
        if tag in ("title", "h1") or (tag == "script" and _is_json_ld(a)):
            self._open.append(tag)
            self._buffers[tag] = []
        self._element(tag, a)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, {name: value or "" for name, value in reversed(attrs)})

    def _element(self, tag: str, a: dict[str, str]) -> None:
        facts = self.facts
        if tag == "html" and a.get("lang", "").strip():
            facts.lang = a["lang"].strip()
        elif tag == "meta":
            self._meta(a)
        elif tag == "link":
            self._link(a)
        elif tag == "base" and facts.base_href is None and a.get("href", "").strip():
            facts.base_href = a["href"].strip()
        elif tag == "a":
            self._anchor(a)
        elif tag == "img" and not a.get("alt", "").strip():
            facts.images_without_alt.append(a.get("src", ""))

    def _link(self, a: dict[str, str]) -> None:
        rels = a.get("rel", "").lower().split()
        href = a.get("href", "").strip()
        if "canonical" in rels:
            self.facts.canonicals.append(href)
        elif "alternate" in rels and a.get("hreflang", "").strip() and href:
            self.facts.hreflang.append((a["hreflang"].strip().lower(), href))

    def _meta(self, a: dict[str, str]) -> None:
        name = a.get("name", "").strip().lower()
        if name == "description":
            self.facts.descriptions.append(a.get("content", "").strip())
        elif name == "viewport":
            self.facts.viewport = True
        elif name in ("robots", "googlebot") and "content" in a:
            self.facts.robots_meta.append((name, a["content"]))

    def _anchor(self, a: dict[str, str]) -> None:
        href = a.get("href", "").strip()
        if not href or href.lower().startswith("javascript:"):
            self.facts.non_crawlable.append(href or "(no href)")
        elif not href.startswith(("#", "mailto:", "tel:", "data:")):
            nofollow = "nofollow" in a.get("rel", "").lower().split()
            self.facts.links.append(Link(href, nofollow))

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TEXT and self._skip:
            self._skip -= 1
        name = "script" if tag == "script" else tag
        if self._open and self._open[-1] == name:
            self._open.pop()
            text = "".join(self._buffers.pop(name, []))
            if name == "title":
                self.facts.titles.append(" ".join(text.split()))
            elif name == "h1":
                self.facts.h1.append(" ".join(text.split()))
            else:
                self.facts.json_ld.append(text)

    def handle_data(self, data: str) -> None:
        for name in self._open:
            self._buffers[name].append(data)
        if not self._skip:
            self._text.append(data)

    def finish(self) -> PageFacts:
        text = " ".join(" ".join(self._text).split())
        self.facts.words = count_words(text)
        self.facts.text_hash = hashlib.sha256(text.encode()).hexdigest()[:32]
        return self.facts


def count_words(text: str) -> int:
    """How many runs of word characters (``\\w+``) ``text`` holds."""
    if text.isascii():
        return len(text.encode().translate(_ASCII_WORD_BYTES).split())
    return len(_WORD.findall(text))


def _is_json_ld(attrs: dict[str, str]) -> bool:
    return attrs.get("type", "").strip().lower() == "application/ld+json"


def parse_page(html: str) -> PageFacts:
    """Never raises, whatever the markup: what was read before a parser error still counts."""
    parser = _PageParser()
    if scan(html, parser, _READ_ATTRIBUTES):
        return parser.finish()
    return _parse_with_stdlib(html)


def _parse_with_stdlib(html: str) -> PageFacts:
    parser = _PageParser()
    # The stdlib parser has raised on odd markup in past releases.
    with contextlib.suppress(Exception):
        parser.feed(html)
        parser.close()
    return parser.finish()
