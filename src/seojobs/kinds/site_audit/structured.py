"""Microdata and RDFa (Lite) items of a page, read into the shape JSON-LD items have
(``{"@type": [...], "name": ..., "offers": {...}}``), so one set of checks reads all three
syntaxes (``richresults``, ``vocabulary``).

Only pages that carry the attributes are read again for them (``has_items``: substring
tests), so pages without microdata or RDFa cost next to nothing. Everything is bounded: a
hostile page gets at most ``MAX_ITEMS`` items of ``MAX_PROPERTIES`` properties each, values of
``MAX_VALUE`` characters, and nesting of ``MAX_OPEN`` elements; what lies past a bound is
dropped, never raised on.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

MAX_ITEMS = 200
MAX_PROPERTIES = 100
MAX_VALUE = 300
MAX_OPEN = 512
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
    | {"track", "wbr", "param", "keygen"}
)
# Where microdata takes an element's value from (HTML's "itemprop value"); else its text.
_URL_ATTR = {
    "a": "href",
    "area": "href",
    "link": "href",
    "img": "src",
    "audio": "src",
    "video": "src",
    "source": "src",
    "iframe": "src",
    "embed": "src",
    "track": "src",
    "object": "data",
    "data": "value",
    "meter": "value",
    "time": "datetime",
    "meta": "content",
}
SCHEMA_ORG = ("schema.org/", "schema:")


def has_items(html: str) -> bool:
    """Whether the page may hold microdata or RDFa (cheap: most pages hold none)."""
    return ("item" in html and ("itemprop" in html or "itemscope" in html)) or "typeof" in html


def _name(term: str) -> str:
    """``https://schema.org/Product``, ``schema:Product``, ``Product`` -> ``Product``."""
    return term.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].rsplit("#", 1)[-1]


@dataclass
class Item:
    syntax: str  # "microdata" or "rdfa"
    types: list[str]
    schema_org: bool  # its type is schema.org's (so the vocabulary applies)
    properties: dict[str, list[Any]] = field(default_factory=dict)

    def add(self, name: str, value: Any) -> None:
        values = self.properties.get(name)
        if values is None:
            if len(self.properties) >= MAX_PROPERTIES:
                return
            values = self.properties[name] = []
        if len(values) < MAX_PROPERTIES:
            values.append(value)

    def as_json_ld(self) -> dict[str, Any]:
        node: dict[str, Any] = {"@type": self.types if len(self.types) != 1 else self.types[0]}
        for name, values in self.properties.items():
            shaped = [v.as_json_ld() if isinstance(v, Item) else v for v in values]
            node[name] = shaped[0] if len(shaped) == 1 else shaped
        return node


@dataclass
class _Open:
    tag: str
    microdata: Item | None = None  # the item this element opened, for each syntax
    rdfa: Item | None = None
    text_for: list[tuple[Item, str]] = field(default_factory=list)  # (item, property)
    text: list[str] = field(default_factory=list)
    chars: int = 0
    vocab: bool = False  # it set an RDFa vocab, in force until it closes


@dataclass
class Items:
    """A page's items, top-level ones only (nested ones are their parents' values)."""

    microdata: list[Item] = field(default_factory=list)
    rdfa: list[Item] = field(default_factory=list)
    # itemprop with no item around it, itemscope with no itemtype: as written, a sample.
    stray_properties: list[str] = field(default_factory=list)
    untyped_items: int = 0


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found = Items()
        self.open: list[_Open] = []
        self.made = 0
        self.vocab: list[str] = []  # RDFa vocab in force, innermost last

    def _current(self, syntax: str) -> Item | None:
        for entry in reversed(self.open):
            item = entry.microdata if syntax == "microdata" else entry.rdfa
            if item is not None:
                return item
        return None

    def _new(self, syntax: str, types: list[str], schema_org: bool) -> Item | None:
        if self.made >= MAX_ITEMS:
            return None
        self.made += 1
        return Item(syntax, types, schema_org)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in reversed(attrs)}
        entry = _Open(tag)
        self._microdata(tag, a, entry)
        self._rdfa(tag, a, entry)
        if tag in _VOID:
            self._close(entry)
        elif len(self.open) < MAX_OPEN:
            self.open.append(entry)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID and self.open and self.open[-1].tag == tag:
            self._close(self.open.pop())

    def _microdata(self, tag: str, a: dict[str, str], entry: _Open) -> None:
        names = [_name(n) for n in a.get("itemprop", "").split()][:10]
        parent = self._current("microdata")
        if "itemscope" in a:
            written = a.get("itemtype", "").split()[:5]
            if not written:
                self.found.untyped_items += 1
            schema_org = any(s in t for t in written for s in SCHEMA_ORG)
            item = self._new("microdata", [_name(t) for t in written], schema_org)
            entry.microdata = item
            if item is None:
                return
            if names and parent is not None:
                for name in names:
                    parent.add(name, item)
            elif len(self.found.microdata) < MAX_ITEMS:
                self.found.microdata.append(item)
        elif names:
            if parent is None:
                if len(self.found.stray_properties) < 10:
                    self.found.stray_properties.append(" ".join(names)[:MAX_VALUE])
                return
            self._value(tag, a, entry, parent, names, _URL_ATTR.get(tag))

    def _rdfa(self, tag: str, a: dict[str, str], entry: _Open) -> None:
        if "vocab" in a:
            self.vocab.append(a["vocab"])
            entry.vocab = True
        names = [_name(n) for n in a.get("property", "").split()][:10]
        parent = self._current("rdfa")
        if "typeof" in a:
            written = a["typeof"].split()[:5]
            vocab = self.vocab[-1] if self.vocab else ""
            schema_org = any(
                s in t or (":" not in t and s in vocab) for t in written for s in SCHEMA_ORG
            )
            item = self._new("rdfa", [_name(t) for t in written], schema_org)
            entry.rdfa = item
            if item is None:
                return
            if names and parent is not None:
                for name in names:
                    parent.add(name, item)
            elif len(self.found.rdfa) < MAX_ITEMS:
                self.found.rdfa.append(item)
        elif names and parent is not None:
            order = ("content", "href", "src", "resource", "datetime")
            attr = next((n for n in order if n in a), None)
            self._value(tag, a, entry, parent, names, attr)

    def _value(
        self, tag: str, a: dict[str, str], entry: _Open, item: Item, names: list[str], attr: Any
    ) -> None:
        if attr is not None and (attr in a or tag in _VOID):
            for name in names:
                item.add(name, a.get(attr, "").strip()[:MAX_VALUE])
        else:
            entry.text_for += [(item, name) for name in names]

    def handle_data(self, data: str) -> None:
        for entry in self.open:
            if entry.text_for and entry.chars < MAX_VALUE:
                entry.text.append(data)
                entry.chars += len(data)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i].tag == tag:
                while len(self.open) > i:
                    self._close(self.open.pop())
                return

    def _close(self, entry: _Open) -> None:
        if entry.text_for:
            text = " ".join("".join(entry.text).split())[:MAX_VALUE]
            for item, name in entry.text_for:
                item.add(name, text)
        if entry.vocab and self.vocab:
            self.vocab.pop()

    def finish(self) -> Items:
        while self.open:
            self._close(self.open.pop())
        return self.found


def parse_items(html: str) -> Items:
    """The page's microdata and RDFa items; never raises, whatever the markup."""
    parser = _Parser()
    with contextlib.suppress(Exception):
        parser.feed(html)
        parser.close()
    return parser.finish()
