"""Read what indexability needs from an HTML document's <head>: robots meta, canonical, base.

Only the head counts: Google ignores ``rel=canonical`` outside it, and an element that does not
belong in a head (a <div>, visible text) ends the head the way a browser's parser ends it. So
parsing stops there, which also keeps big pages cheap.

Two tokenizers feed the same handlers (:class:`_HeadParser`). Most heads are plain markup
(tags with quoted or simple attribute values, comments, a doctype, scripts and styles), and a
scanner of our own reads those with a few regular expressions, in well under half the CPU
of the stdlib parser (``bench/check.py``'s pages: ~34 us against ~90 us; html.parser was the
biggest cost of our own in an index check). At the first thing it does not know as plain (a
character reference in visible text, odd attribute syntax, ``<?``, an unclosed construct, a
script that does not end plainly), it gives up and the stdlib parser, lenient enough for
broken markup, reads the document from the start, so the answer is always the stdlib
parser's. ``tests/unit/test_fetch_html.py`` checks the two side by side.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser
from typing import Protocol

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
    # html.parser gave up (on a marked section, ``<![``); what was read before still counts
    malformed: bool = False


def _attributes(attrs: list[tuple[str, str | None]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in attrs:
        found.setdefault(name.lower(), value or "")  # the first of a duplicate wins (HTML)
    return found


class _HeadParser(HTMLParser):
    # Text between tags only counts as a whole (visible or not, with "&" or not): the scanner
    # may hand it over without the spaces and line breaks that start it (see scan).
    skips_leading_space = True

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
        if tag in _WITH_ATTRIBUTES:  # the only elements _element reads
            self._element(tag, _attributes(attrs))

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self.done = True
        elif tag in _RAW_TEXT and self._raw_depth > 0:
            self._raw_depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.done and self._raw_depth == 0 and data.strip():
            self.done = True  # visible text starts the body

    def scanned_text(self, text: str) -> str | None:
        # A character reference in visible text could be whitespace (&nbsp;): left to the
        # stdlib parser, as is everything this scanner was first measured without.
        return None if "&" in text and not self._raw_depth else text

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


# -- the scanner of plain markup ---------------------------------------------------------------

# Only these separate a tag's parts here: html.parser ends a tag name at exactly these, and
# anything else (\v, Unicode spaces) sends the document to it.
_SP = "[ \t\n\r\f]"
_VALUE = r"""(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+)"""  # quoted, or bare (never empty)
_NAME = "[a-zA-Z_:][-a-zA-Z0-9_:.]*"
_ATTRIBUTES = re.compile(rf"{_SP}+({_NAME})(?:{_SP}*={_SP}*({_VALUE}))?")
_ANY_ATTRIBUTE = rf"{_SP}+{_NAME}(?:{_SP}*={_SP}*{_VALUE})?"
# One plain token: text (whitespace too, handed over as html.parser hands it: an audit joins
# a heading's pieces), a start tag, an end tag, a doctype, or the opening of a comment. Which
# group matched tells them apart.
_TOKEN = re.compile(
    r"(?:([^<]+)"
    rf"|<([a-zA-Z][a-zA-Z0-9-]*)((?:{_ANY_ATTRIBUTE})*){_SP}*(/?)>"
    rf"|</([a-zA-Z][a-zA-Z0-9-]*){_SP}*>"
    r"|(<!--)"
    r"|<![dD][oO][cC][tT][yY][pP][eE][^<>]*>)"
)
_TEXT, _START, _END, _COMMENT = 1, 4, 5, 6  # Match.lastindex of each kind (None: doctype)
# The same token after any spaces and line breaks, for a sink that reads text only as a whole
# (``skips_leading_space``): the blank text between two tags costs no token of its own.
_SPACE = " \t\n\r\f"
_TOKEN_AFTER_SPACE = re.compile(f"[{_SPACE}]*" + _TOKEN.pattern)
# html.parser reads these up to their end tag.
_CDATA_END = {tag: re.compile(f"</{tag}", re.IGNORECASE) for tag in ("script", "style")}
_SPACED_END_TAG = re.compile(r"</\s")
_WITH_ATTRIBUTES = frozenset({"meta", "link", "base"})  # the head's handlers read no other's


class TokenSink(Protocol):
    """What the scanner feeds: html.parser's handlers, ``done`` (stop reading), and how text
    between tags is handed over (``None``: it is not plain, the scanner gives up). A sink
    whose class sets ``skips_leading_space = True`` reads text only as a whole (whether it is
    blank, whether it holds a "&"): it is handed text without the spaces and line breaks
    (`` \t\n\r\f``) that start it, and blank text between two tags not at all."""

    done: bool

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None: ...
    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None: ...
    def handle_endtag(self, tag: str) -> None: ...
    def handle_data(self, data: str) -> None: ...
    def handle_decl(self, decl: str) -> None: ...
    def scanned_text(self, text: str) -> str | None: ...


def _attribute_list(text: str) -> list[tuple[str, str | None]]:
    """(name, value) pairs as html.parser hands them over: names lowercased, values with their
    character references replaced, ``None`` for a name without a value."""
    pairs: list[tuple[str, str | None]] = []
    for name, written in _ATTRIBUTES.findall(text):
        value: str | None = written or None  # "" only when there was no value at all
        if written[:1] in ("'", '"'):
            value = written[1:-1]
        if value and "&" in value:
            value = unescape(value)
        pairs.append((name.lower(), value))
    return pairs


def _skip_cdata(document: str, pos: int, tag: str) -> int:
    """Where a script's or style's content ends plainly (after ``</script>``); -1 otherwise.

    Plainly: at the first ``</script`` (any case), written ``</script>``, with no ``</`` and
    a space before it and no ``<!--`` in the content, where html.parser releases differ."""
    found = _CDATA_END[tag].search(document, pos)
    if found is None or document[found.end() : found.end() + 1] != ">":
        return -1
    content = document[pos : found.start()]
    if "<!--" in content or _SPACED_END_TAG.search(content):
        return -1
    return found.end() + 1


def _skip_comment(document: str, pos: int) -> int:
    """Where a plain comment that opens at ``pos`` ends; -1 for any other shape (an unclosed
    one, ``--`` inside, ``<!-->``), on which html.parser releases disagree."""
    end = document.find("-->", pos + 4)
    if end < 0:
        return -1
    body = document[pos + 4 : end]
    if "--" in body or body.startswith((">", "->")) or body.endswith("-"):
        return -1
    return end + 3


def _raw_text(document: str, pos: int, tag: str, parser: TokenSink) -> int:
    """Hand over a script's or style's content and its end tag; where it ends, or -1."""
    end = _skip_cdata(document, pos, tag)
    if end < 0:
        return -1
    content = document[pos : end - len(tag) - 3]  # up to its "</script>"
    if content:  # raw, in one piece, as html.parser hands it over
        parser.handle_data(content)
    parser.handle_endtag(tag)
    return end


def scan(
    document: str, parser: TokenSink, attributes: frozenset[str] | None = _WITH_ATTRIBUTES
) -> bool:
    """Feed ``parser`` the tokens of ``document`` as html.parser would (the attributes of the
    tags in ``attributes`` only; None: of every tag), until the end or ``parser.done``; False
    as soon as something is not plain markup (then nothing it read counts: parse again with
    html.parser)."""
    pos, size = 0, len(document)
    token_at = (
        _TOKEN_AFTER_SPACE if getattr(parser, "skips_leading_space", False) else _TOKEN
    ).match
    while pos < size and not parser.done:
        token = token_at(document, pos)
        if token is None:
            return False
        kind, pos = token.lastindex, token.end()
        if kind == _TEXT:
            text = parser.scanned_text(token[_TEXT])
            if text is None:
                return False
            parser.handle_data(text)
        elif kind == _START:
            tag = token[2].lower()
            attrs = _attribute_list(token[3]) if attributes is None or tag in attributes else []
            if token[_START]:
                parser.handle_startendtag(tag, attrs)
                continue
            parser.handle_starttag(tag, attrs)
            if tag in _CDATA_END:
                pos = _raw_text(document, pos, tag, parser)
                if pos < 0:
                    return False
        elif kind == _END:
            parser.handle_endtag(token[_END].lower())
        elif kind == _COMMENT:
            pos = _skip_comment(document, token.start(_COMMENT))
            if pos < 0:
                return False
        else:
            # a doctype: "DOCTYPE html", as html.parser hands it over
            parser.handle_decl(token[0].lstrip(_SPACE)[2:-1])
    return True


# -- html.parser, for everything else ----------------------------------------------------------


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


def _parse_with_stdlib(document: str) -> HeadInfo:
    parser = _HeadParser()
    try:
        for piece in _pieces(document):
            parser.feed(piece)
            if parser.done:
                break
    except Exception:  # the stdlib parser has raised on odd markup in past releases
        parser.info.malformed = True
    return parser.info


def parse_head(document: str) -> HeadInfo:
    """Parse the head of ``document``; never raises, whatever the markup."""
    parser = _HeadParser()
    if scan(document, parser):
        return parser.info
    return _parse_with_stdlib(document)
