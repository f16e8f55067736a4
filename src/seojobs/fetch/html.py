"""Read what indexability needs from an HTML document's <head>: robots meta, canonical, base.

Only the head counts: Google ignores ``rel=canonical`` outside it, and an element that does not
belong in a head (a <div>, visible text) ends the head the way a browser's parser ends it. So
parsing stops there, which also keeps big pages cheap. The stdlib parser is lenient enough for
broken markup, and it never needs the rest of the document.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

# Meta names that carry robots directives Google reads (generic and Googlebot-specific).
ROBOTS_META_NAMES = frozenset({"robots", "googlebot"})
_HEAD_ELEMENTS = frozenset(
    {"html", "head", "title", "meta", "link", "base", "script", "style", "noscript", "template"}
)
_RAW_TEXT = frozenset({"title", "script", "style", "noscript", "template"})
_CHUNK = 8192
_HEAD_END = re.compile(r"</head\s*>", re.IGNORECASE)


@dataclass
class HeadInfo:
    robots_meta: list[tuple[str, str]] = field(default_factory=list)  # (name, content)
    canonicals: list[str] = field(default_factory=list)  # href values as written
    base_href: str | None = None
    malformed: bool = False  # the parser gave up; what was read before still counts


def _attributes(attrs: list[tuple[str, str | None]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in attrs:
        found.setdefault(name.lower(), value or "")  # the first of a duplicate wins (HTML)
    return found


class _HeadParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.info = HeadInfo()
        self.done = False
        self._raw_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, opens=True)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, opens=False)

    def _start(self, tag: str, attrs: list[tuple[str, str | None]], *, opens: bool) -> None:
        if self.done or self._raw_depth:
            # Markup inside <noscript>/<title>/<template> is text to a scripting browser: a
            # tracking-pixel <img> in a head <noscript> must not end the head.
            return
        if tag not in _HEAD_ELEMENTS:
            self.done = True  # <body> or any body element closes the head
            return
        if opens and tag in _RAW_TEXT:
            self._raw_depth += 1
        self._element(tag, _attributes(attrs))

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self.done = True
        elif tag in _RAW_TEXT and self._raw_depth > 0:
            self._raw_depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.done and self._raw_depth == 0 and data.strip():
            self.done = True  # visible text starts the body

    def _element(self, tag: str, attrs: dict[str, str]) -> None:
        info = self.info
        if tag == "meta":
            name = attrs.get("name", "").strip().lower()
            if name in ROBOTS_META_NAMES and "content" in attrs:
                info.robots_meta.append((name, attrs["content"]))
        elif tag == "link":
            rels = attrs.get("rel", "").lower().split()
            href = attrs.get("href", "").strip()
            if "canonical" in rels and href:
                info.canonicals.append(href)
        elif tag == "base" and info.base_href is None and attrs.get("href", "").strip():
            info.base_href = attrs["href"].strip()


def _pieces(document: str) -> Iterator[str]:
    """The document in the order it is fed: up to the first ``</head>``, then in chunks.

    Most pages end their head with ``</head>``, so the parser usually stops there without
    reading the body. If that tag was not the end of the head (it sat in a script, a comment
    or a title), the parser is not done and simply reads on: the result is the same.
    """
    end = _HEAD_END.search(document)
    cut = end.end() if end is not None else 0
    if cut:
        yield document[:cut]
    for start in range(cut, len(document), _CHUNK):
        yield document[start : start + _CHUNK]


def parse_head(document: str) -> HeadInfo:
    """Parse the head of ``document``; never raises, whatever the markup."""
    parser = _HeadParser()
    try:
        for piece in _pieces(document):
            parser.feed(piece)
            if parser.done:
                break
    except Exception:  # the stdlib parser has raised on odd markup in past releases
        parser.info.malformed = True
    return parser.info
