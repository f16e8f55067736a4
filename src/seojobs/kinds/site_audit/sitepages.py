"""Every page's record, held compactly for the site-wide phase (issue 30.6: 100,000 pages
within 300 MB).

The site-wide checks (``sitewide``), the summary and the page table read every page's
record, and look pages up by URL. Held as one dict per page (each with its list of link
URLs), a 20,000-page audit took 150 MB more than its crawl. Here each field is a column:
numbers in ``array``\\ s, strings as UTF-8 in one ``bytearray`` with their offsets, links as
the positions of their targets among the crawl's URLs (one ``array`` of ints for the whole
site), issue codes as small ints; what is rare or new (hreflang, pagination, loads, any key
a later rule adds) as JSON bytes. :class:`PageView` reads one row as the records read
(``page.get("status")``, ``page["url"]``), built when asked and dropped after, so the checks
keep their dict-like code; nothing is held per page but the URL strings the frontier already
held.
"""

from __future__ import annotations

import ctypes
import json
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

Record = Mapping[str, Any]

NONE = -(2**63)  # an int column's None
INTS = (
    "status",
    "depth",
    "response_ms",
    "redirects",
    "words",
    "out_links",
    "external_links",
    "bytes",
)
FLAGS = ("indexable", "blocked_by_robots")  # None, False or True
CODES = ("content_type", "indexability_reason", "error_kind", "robots")  # few distinct values
TEXTS = ("title", "description", "h1", "content_hash")
URL_TEXTS = ("final_url", "canonical")  # most often the page's own URL: then held as a mark
JSONS = ("hreflang", "pagination")  # as JSON, None when empty
LOADS = "loads"  # the site's URLs a page loads: JSON, each without the page's own origin
SKIPPED = ("external",)  # external links' outcomes: kept in the record for a resume only
COLUMNS = frozenset(
    ("url", "links", "issues", LOADS, *INTS, *FLAGS, *CODES, *TEXTS, *URL_TEXTS, *JSONS, *SKIPPED)
)
_FLAG = {None: 2, False: 0, True: 1}
_UNFLAG = (False, True, None)
_MISSING = object()


def _int(ints: array[int], row: int) -> int | None:
    value = ints[row]
    return None if value == NONE else value


def _flag(flags: bytearray, row: int) -> bool | None:
    return _UNFLAG[flags[row]]


def _json(texts: _Texts, row: int) -> Any:
    text = texts[row]
    return None if text is None else json.loads(text)


def _none(_row: int) -> None:
    return None


_TEXT, _NULL, _OWN_URL = 0, 1, 2  # what a _Texts row holds: its text, None, the page's URL


class _Texts:
    """Optional strings, one per row, as UTF-8 in one buffer (its offsets as 4-byte ints: a
    buffer of 4 GB is far beyond the worker's memory)."""

    __slots__ = ("data", "ends", "marks")

    def __init__(self) -> None:
        self.data = bytearray()
        self.ends = array("I")
        self.marks = bytearray()

    def append(self, value: Any, mark: int = _TEXT) -> None:
        if value is None:
            mark = _NULL
        elif mark == _TEXT:
            self.data += str(value).encode("utf-8", "surrogatepass")
        self.ends.append(len(self.data))
        self.marks.append(mark)

    def __getitem__(self, row: int) -> str | None:
        if self.marks[row]:
            return None
        start = self.ends[row - 1] if row else 0
        return self.data[start : self.ends[row]].decode("utf-8", "surrogatepass")


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of an absolute URL."""
    end = url.find("/", url.find("://") + 3)
    return url if end < 0 else url[:end]


class _Codes:
    """Strings of few distinct values, each row an index into the distinct ones."""

    __slots__ = ("index", "rows", "values")

    def __init__(self) -> None:
        self.values: list[Any] = [None]
        self.index: dict[Any, int] = {None: 0}
        self.rows = array("i")

    def code(self, value: Any) -> int:
        found = self.index.get(value)
        if found is None:
            found = self.index[value] = len(self.values)
            self.values.append(value)
        return found

    def append(self, value: Any) -> None:
        self.rows.append(self.code(value))

    def __getitem__(self, row: int) -> Any:
        return self.values[self.rows[row]]


class SitePages(Sequence["PageView"]):
    """The records of a crawl, in the order added (the items' order), looked up by URL.

    ``urls``: every URL the crawl knows (its items, the frontier's set); links are kept as
    positions among them, so a link to a URL the crawl never stored is dropped (every check
    skips those: "never crawled")."""

    def __init__(self, urls: Iterable[str]) -> None:
        self.urls: list[str] = list(urls)
        self.position: dict[str, int] = {url: i for i, url in enumerate(self.urls)}
        self.row_of = array("i", [-1]) * len(self.urls)  # URL position -> row, -1: no record
        self.at = array("i")  # row -> URL position
        self.seqs = array("q")
        self.ints = {name: array("q") for name in INTS}
        self.flags = {name: bytearray() for name in FLAGS}
        self.codes = {name: _Codes() for name in CODES}
        self.texts = {name: _Texts() for name in TEXTS}
        self.url_texts = {name: _Texts() for name in URL_TEXTS}
        self.jsons = {name: _Texts() for name in JSONS}
        self.loads = _Texts()
        self.link_ends = array("I")
        self.links = array("i")  # URL positions, row after row
        self.issue_ends = array("I")
        self.issues = array("i")  # issue codes, as CODES' own _Codes
        self.issue_codes = _Codes()
        self.extras = _Texts()  # any other key, as JSON
        self.getters: dict[str, Callable[[int], Any]] = {
            "url": lambda row: self.urls[self.at[row]],
            "links": lambda row: [self.urls[at] for at in self.link_targets(row)],
            "issues": self._issues,
            **{name: partial(_int, ints) for name, ints in self.ints.items()},
            **{name: partial(_flag, flags) for name, flags in self.flags.items()},
            **{name: codes.__getitem__ for name, codes in self.codes.items()},
            **{name: texts.__getitem__ for name, texts in self.texts.items()},
            **{name: partial(self._url_text, texts) for name, texts in self.url_texts.items()},
            LOADS: self._loads,
            **{name: partial(_json, texts) for name, texts in self.jsons.items()},
            **{name: _none for name in SKIPPED},
        }

    def _position(self, url: str) -> int:
        found = self.position.get(url)
        if found is None:  # not among the URLs given: a record of its own all the same
            found = self.position[url] = len(self.urls)
            self.urls.append(url)
            self.row_of.append(-1)
        return found

    def add(self, seq: int, record: Record) -> None:
        """One page's record (an item's result)."""
        at = self._position(str(record["url"]))
        if self.row_of[at] >= 0:
            return  # one row per URL, as the items are
        self.row_of[at] = len(self.at)
        self.at.append(at)
        self.seqs.append(seq)
        for name, ints in self.ints.items():
            value = record.get(name)
            ints.append(NONE if value is None else int(value))
        for name, flags in self.flags.items():
            flags.append(_FLAG[None if record.get(name) is None else bool(record.get(name))])
        for name, codes in self.codes.items():
            codes.append(record.get(name))
        for name, texts in self.texts.items():
            texts.append(record.get(name))
        url = self.urls[at]
        for name, texts in self.url_texts.items():
            value = record.get(name)
            texts.append(value, _OWN_URL if value == url else _TEXT)
        for name, texts in self.jsons.items():
            value = record.get(name)
            texts.append(json.dumps(value, separators=(",", ":")) if value else None)
        if loads := record.get(LOADS):
            origin = _origin(url) + "/"
            cut = len(origin) - 1  # a path starts "/", an absolute URL never does
            short = [u[cut:] if u.startswith(origin) else u for u in loads]
            self.loads.append(json.dumps(short, separators=(",", ":")))
        else:
            self.loads.append(None)
        position = self.position.get
        self.links.extend(
            p for p in (position(u) for u in record.get("links") or ()) if p is not None
        )
        self.link_ends.append(len(self.links))
        self.issues.extend(self.issue_codes.code(c) for c in record.get("issues") or ())
        self.issue_ends.append(len(self.issues))
        extra = {k: v for k, v in record.items() if k not in COLUMNS and v not in (None, {}, [])}
        self.extras.append(json.dumps(extra, separators=(",", ":")) if extra else None)

    def __len__(self) -> int:
        return len(self.at)

    def __iter__(self) -> Iterator[PageView]:
        return (PageView(self, row) for row in range(len(self.at)))

    def __getitem__(self, row: int) -> PageView:  # type: ignore[override]
        if not 0 <= row < len(self.at):
            raise IndexError(row)
        return PageView(self, row)

    def _url_text(self, texts: _Texts, row: int) -> str | None:
        return self.urls[self.at[row]] if texts.marks[row] == _OWN_URL else texts[row]

    def _loads(self, row: int) -> list[str] | None:
        text = self.loads[row]
        if text is None:
            return None
        origin = _origin(self.urls[self.at[row]])
        return [origin + u if u.startswith("/") else u for u in json.loads(text)]

    def _issues(self, row: int) -> list[str]:
        start = self.issue_ends[row - 1] if row else 0
        values = self.issue_codes.values
        return [values[c] for c in self.issues[start : self.issue_ends[row]]]

    def link_targets(self, row: int) -> array[int]:
        """The URL positions row ``row`` links to (distinct, as the record kept them)."""
        return self.links[self.link_ends[row - 1] if row else 0 : self.link_ends[row]]

    def seq_rows(self) -> Iterator[tuple[int, PageView]]:
        """(item seq, page) in order."""
        return ((self.seqs[row], PageView(self, row)) for row in range(len(self.at)))

    @property
    def by_url(self) -> ByUrl:
        return ByUrl(self)

    def shared(self, urls: Iterable[str]) -> list[str]:
        """``urls``, each the crawl's own string where it has one (a sitemap's 100,000 URLs
        read as strings of their own are 9 MB more)."""
        position, own = self.position.get, self.urls
        return [url if (at := position(url)) is None else own[at] for url in urls]

    def url_set(self, urls: Iterable[str]) -> UrlSet:
        """``set(urls)``, held as a byte per URL the crawl knows."""
        return UrlSet(self, urls)


class UrlSet(Collection[str]):
    """A set of URLs, those the crawl knows as a byte per URL position (a set of 100,000
    URLs is 8 MB of hash table), any other in a set of its own."""

    __slots__ = ("count", "marks", "others", "position")

    def __init__(self, pages: SitePages, urls: Iterable[str]) -> None:
        self.position = pages.position
        self.marks = bytearray(len(pages.urls))
        self.others: set[str] = set()
        self.count = 0
        for url in urls:
            if url not in self:
                self.count += 1
                at = self.position.get(url)
                if at is not None and at < len(self.marks):
                    self.marks[at] = 1
                else:
                    self.others.add(url)

    def __contains__(self, url: object) -> bool:
        at = self.position.get(url) if isinstance(url, str) else None
        if at is not None and at < len(self.marks) and self.marks[at]:
            return True
        return url in self.others

    def __iter__(self) -> Iterator[str]:
        urls = self.position  # a URL's position -> the URL: every URL the crawl knows
        yield from (url for url, at in urls.items() if at < len(self.marks) and self.marks[at])
        yield from self.others

    def __len__(self) -> int:
        return self.count


class ByUrl(Mapping[str, "PageView"]):
    """URL -> its page, for the pages that have a record."""

    __slots__ = ("pages",)

    def __init__(self, pages: SitePages) -> None:
        self.pages = pages

    def __getitem__(self, url: str) -> PageView:
        at = self.pages.position.get(url)
        row = self.pages.row_of[at] if at is not None else -1
        if row < 0:
            raise KeyError(url)
        return PageView(self.pages, row)

    def get(self, url: str, default: Any = None) -> Any:
        at = self.pages.position.get(url)
        row = self.pages.row_of[at] if at is not None else -1
        return PageView(self.pages, row) if row >= 0 else default

    def __contains__(self, url: object) -> bool:
        return isinstance(url, str) and self.get(url) is not None

    def __iter__(self) -> Iterator[str]:
        return (self.pages.urls[at] for at in self.pages.at)

    def __len__(self) -> int:
        return len(self.pages)


class PageView(Mapping[str, Any]):
    """One page's record read from the columns, as the record's dict would answer (a field
    the record had as None, or lacked, is absent)."""

    __slots__ = ("pages", "row")

    def __init__(self, pages: SitePages, row: int) -> None:
        self.pages = pages
        self.row = row

    def _value(self, name: str) -> Any:
        getter = self.pages.getters.get(name)
        if getter is not None:
            return getter(self.row)
        extra = self.pages.extras[self.row]
        return json.loads(extra).get(name) if extra is not None else None

    def get(self, name: str, default: Any = None) -> Any:
        getter = self.pages.getters.get(name)
        value = getter(self.row) if getter is not None else self._value(name)
        return default if value is None else value

    def __getitem__(self, name: str) -> Any:
        value = self._value(name)
        if value is None and name not in COLUMNS:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        extra = self.pages.extras[self.row]
        names = [*COLUMNS.difference(SKIPPED), *(json.loads(extra) if extra else ())]
        return (name for name in names if self._value(name) is not None)

    def __len__(self) -> int:
        return sum(1 for _name in self)


def release_freed_memory() -> None:
    """Hand back to the system what the C heap holds free (glibc; elsewhere nothing): the
    crawl's page bodies and parse trees freed, held by malloc all the same, while the
    site-wide phase's columns and Python objects take memory of their own (issue 30.6).
    Called in a thread (ctypes lets the GIL go): the trim walks the whole heap. No
    ``gc.collect()``: a full collection holds the GIL over every object of the process,
    blocking the loop and its heartbeats meanwhile; in CI, audits run by the tests'
    in-process workers (processes of millions of objects, at load 7) lost their lease four
    times in a row with it, the likely cause."""
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)
