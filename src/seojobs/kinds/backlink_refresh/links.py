"""The links of a donor page: every ``<a href>`` and ``<area href>`` with its rel tokens, its
text (or its image's alt) and the document's ``<base href>``.

The whole document is read (the fetcher caps its size): a backlink may sit anywhere in the
body. Plain markup is fed by ``seojobs.fetch.html.scan`` and anything else by the stdlib
parser from the start, as the audit's page parser does, so the links are always the stdlib
parser's (tests/unit/test_backlink_links.py reads both ways).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser

from seojobs.fetch.errors import FetchError
from seojobs.fetch.html import scan
from seojobs.fetch.urls import join_url, parse_url

_SKIP_TEXT = frozenset({"script", "style"})
_NOT_LINKS = ("#", "mailto:", "tel:", "javascript:", "data:")
_WITH_ATTRIBUTES = frozenset({"a", "area", "img", "base"})


@dataclass(slots=True)
class Link:
    href: str  # as written (trimmed)
    rel: tuple[str, ...]  # lowercased tokens, each once, in order
    text: str = ""  # visible text, whitespace collapsed
    image_alt: str | None = None  # the alt of the first image inside, if any
    has_image: bool = False
    area: bool = False  # an <area> of an image map: its alt is its text

    @property
    def is_image_link(self) -> bool:
        """An image that links (no text of its own beside it)."""
        return (self.has_image or self.area) and not self.text

    @property
    def anchor_text(self) -> str:
        return self.text or (self.image_alt or "")


@dataclass
class DonorLinks:
    base_href: str | None = None
    links: list[Link] = field(default_factory=list)


def rel_tokens(value: str) -> tuple[str, ...]:
    """``rel`` split on whitespace, lowercased, each token once (``NoFollow  sponsored``)."""
    return tuple(dict.fromkeys(value.lower().split()))


class _LinkParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found = DonorLinks()
        self._anchor: Link | None = None
        self._text: list[str] = []
        self._skip = 0
        self.done = False  # the scanner's stop flag: a page is read to its end

    def scanned_text(self, text: str) -> str:
        return unescape(text) if "&" in text else text  # as convert_charrefs does

    def handle_decl(self, decl: str) -> None:
        return None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TEXT:
            self._skip += 1
        self._element(tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, attrs)

    def _element(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _WITH_ATTRIBUTES:
            return
        a = {name: value or "" for name, value in reversed(attrs)}  # the first one wins
        if tag == "a":
            self._close()  # an <a> inside an open one closes it (as browsers do)
            self._anchor = self._link(a)
        elif tag == "area":
            link = self._link(a)
            if link is not None:
                link.area, link.image_alt = True, a.get("alt", "").strip() or None
        elif tag == "img" and self._anchor is not None:
            self._anchor.has_image = True
            alt = a.get("alt", "").strip()
            if alt and self._anchor.image_alt is None:
                self._anchor.image_alt = " ".join(alt.split())
        elif tag == "base" and self.found.base_href is None and a.get("href", "").strip():
            self.found.base_href = a["href"].strip()

    def _link(self, a: dict[str, str]) -> Link | None:
        href = a.get("href", "").strip()
        if not href or href.lower().startswith(_NOT_LINKS):
            return None
        link = Link(href, rel_tokens(a.get("rel", "")))
        self.found.links.append(link)
        return link

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TEXT and self._skip:
            self._skip -= 1
        if tag == "a":
            self._close()

    def handle_data(self, data: str) -> None:
        if self._anchor is not None and not self._skip:
            self._text.append(data)

    def _close(self) -> None:
        if self._anchor is not None:
            self._anchor.text = " ".join("".join(self._text).split())
        self._anchor, self._text = None, []


def parse_links(html: str) -> DonorLinks:
    """The page's links and base; never raises, whatever the markup."""
    parser = _LinkParser()
    if scan(html, parser, _WITH_ATTRIBUTES):
        parser._close()
        return parser.found
    parser = _LinkParser()
    with contextlib.suppress(Exception):  # the stdlib parser has raised on odd markup
        parser.feed(html)
        parser.close()
    parser._close()
    return parser.found


def resolve(page_url: str, base_href: str | None, href: str) -> str | None:
    """``href`` as an absolute http(s) URL: against ``<base href>`` (itself resolved against
    the page) when there is one, else against the page; None when it is no such URL."""
    base = page_url
    if base_href:
        base = _joined(page_url, base_href) or page_url
    return _joined(base, href)


def _joined(base: str, href: str) -> str | None:
    try:
        return str(parse_url(join_url(parse_url(base), href)))
    except (FetchError, ValueError):
        return None
