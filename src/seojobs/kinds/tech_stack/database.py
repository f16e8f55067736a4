"""The fingerprint database in memory: technologies, their patterns and relations, categories.

The format is webappanalyzer's (the continuation of Wappalyzer's open data): technologies by
name, each with ``cats`` (category ids), pattern fields and ``implies`` / ``excludes`` /
``requires`` / ``requiresCategory``; categories by id with a name and a priority. The data is
GPL-3.0 and not shipped: ``seojobs fingerprints update`` installs one file (this module's
``parse`` checks it first), and workers load it once per change of the file.

Garbage is refused with a message (``InvalidDatabase``); a technology or pattern that is
malformed is reported in ``problems`` and skipped, so one bad entry never costs the rest.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seojobs import outside
from seojobs.kinds.tech_stack.patterns import Pattern, patterns_of, split_tags

# Pattern fields read from one HTTP response (no browser): keyed ones map a name to patterns.
KEYED_FIELDS = ("headers", "cookies", "meta")
LISTED_FIELDS = ("scriptSrc", "scripts", "html", "url")
# Fields that need a browser, DNS, or more requests: kept in the file, never evaluated here.
NOT_EVALUATED = ("dom", "js", "css", "xhr", "dns", "robots", "probe", "text", "certIssuer")
MAX_PROBLEMS = 200
UPDATE_COMMAND = "seojobs fingerprints update"


class InvalidDatabase(ValueError):
    """The document is no fingerprint database; the message says what is wrong."""


# A job's (and a creation's refusal's) code when the database is not installed.
FINGERPRINTS_MISSING = "fingerprints_missing"


class FingerprintsMissing(LookupError):
    def __init__(self, path: str) -> None:
        super().__init__(
            f"no tech-stack fingerprint database at {path}: run `{UPDATE_COMMAND}` on this "
            "server (SEOJOBS_TECH_STACK_FINGERPRINTS_PATH says where it is installed)"
        )
        self.path = path


@dataclass(frozen=True)
class Category:
    id: int
    name: str
    priority: int = 0


@dataclass
class Technology:
    name: str
    cats: tuple[int, ...] = ()
    website: str | None = None
    description: str | None = None
    # field -> [(the name it applies to: header, cookie or meta name, lowercased; None for
    # listed fields), pattern]
    patterns: dict[str, list[tuple[str | None, Pattern]]] = field(default_factory=dict)
    implies: list[tuple[str, int]] = field(default_factory=list)  # (name, confidence)
    excludes: list[str] = field(default_factory=list)
    requires: list[str] = field(default_factory=list)
    requires_category: list[int] = field(default_factory=list)


@dataclass
class Fingerprints:
    technologies: dict[str, Technology]
    categories: dict[int, Category]
    problems: list[str] = field(default_factory=list)

    @property
    def pattern_count(self) -> int:
        return sum(len(p) for t in self.technologies.values() for p in t.patterns.values())

    def bad_patterns(self) -> list[str]:
        return [
            f"{tech.name}.{name}: {pattern.error}"
            for tech in self.technologies.values()
            for name, pairs in tech.patterns.items()
            for _key, pattern in pairs
            if pattern.error
        ]


def _names(value: Any) -> list[str]:
    """``implies``/``excludes``/``requires``: a name or a list of them, tags stripped."""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [split_tags(v)[0].strip() for v in items if isinstance(v, str) and v.strip()]


def _implied(value: Any) -> list[tuple[str, int]]:
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    found = []
    for raw in items:
        if isinstance(raw, str) and raw.strip():
            name, tags = split_tags(raw)
            found.append((name.strip(), tags.confidence))
    return found


def _ids(value: Any) -> list[int] | None:
    """Category ids as ints (the files write them as numbers or digit strings)."""
    items = value if isinstance(value, list) else [value]
    ids = []
    for item in items:
        if isinstance(item, bool):
            return None
        if isinstance(item, int) or (isinstance(item, str) and item.strip().isdigit()):
            ids.append(int(item))
        else:
            return None
    return ids


def _keyed(value: Any) -> list[tuple[str | None, Pattern]] | None:
    if not isinstance(value, Mapping):
        return None
    pairs: list[tuple[str | None, Pattern]] = []
    for key, patterns in value.items():
        pairs += [(str(key).lower(), p) for p in patterns_of(patterns)]
    return pairs


def _technology(name: str, entry: Any, problems: list[str]) -> Technology | None:
    if not isinstance(entry, Mapping):
        problems.append(f"{name}: not an object")
        return None
    cats = _ids(entry.get("cats", []))
    if cats is None:
        problems.append(f"{name}.cats: not a list of category ids")
        cats = []
    tech = Technology(
        name,
        tuple(cats),
        entry.get("website") if isinstance(entry.get("website"), str) else None,
        entry.get("description") if isinstance(entry.get("description"), str) else None,
        implies=_implied(entry.get("implies")),
        excludes=_names(entry.get("excludes")),
        requires=_names(entry.get("requires")),
        requires_category=_ids(entry.get("requiresCategory", [])) or [],
    )
    for key in KEYED_FIELDS:
        if key in entry:
            pairs = _keyed(entry[key])
            if pairs is None:
                problems.append(f"{name}.{key}: not an object of name -> pattern")
            elif pairs:
                tech.patterns[key] = pairs
    for key in LISTED_FIELDS:
        if key in entry:
            listed = patterns_of(entry[key])
            if not listed and entry[key] not in ("", []):
                problems.append(f"{name}.{key}: not a pattern or a list of patterns")
            elif listed:
                tech.patterns[key] = [(None, p) for p in listed]
    return tech


def _categories(value: Any) -> dict[int, Category]:
    if not isinstance(value, Mapping):
        raise InvalidDatabase("`categories` must be an object of id -> {name, priority}")
    found = {}
    for key, entry in value.items():
        if not (str(key).isdigit() and isinstance(entry, Mapping)):
            raise InvalidDatabase(f"category {key!r}: expected a numeric id and an object")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidDatabase(f"category {key}: no name")
        priority = entry.get("priority", 0)
        found[int(key)] = Category(int(key), name, priority if isinstance(priority, int) else 0)
    return found


def technologies_of(document: Any) -> Mapping[str, Any]:
    """The technologies of a merged document (``technologies``, or the old ``apps``)."""
    if not isinstance(document, Mapping):
        raise InvalidDatabase("expected a JSON object with `technologies` and `categories`")
    techs = document.get("technologies", document.get("apps"))
    if not isinstance(techs, Mapping) or not techs:
        raise InvalidDatabase(
            "no `technologies` object (name -> fingerprint) in the document: is this a "
            "webappanalyzer database?"
        )
    return techs


def parse(document: Any) -> Fingerprints:
    """A database from a merged document ``{"technologies": {...}, "categories": {...}}``."""
    techs = technologies_of(document)
    if "categories" not in document:
        raise InvalidDatabase("no `categories` object: pass categories.json with technologies")
    categories = _categories(document["categories"])
    problems: list[str] = []
    parsed = {}
    for name, entry in techs.items():
        tech = _technology(str(name), entry, problems)
        if tech is not None:
            parsed[tech.name] = tech
    usable = [t for t in parsed.values() if t.patterns or t.implies]
    if not usable:
        raise InvalidDatabase("not one technology has a pattern: nothing could ever match")
    return Fingerprints(parsed, categories, problems[:MAX_PROBLEMS])


# -- the installed file, loaded once per change --------------------------------------------

_lock = threading.Lock()
_loaded: dict[str, tuple[tuple[int, int], Fingerprints]] = {}


def load(path: str) -> Fingerprints:
    """The database installed at ``path``, parsed once per change of the file (workers
    keep it; ``seojobs fingerprints update`` replaces the file atomically)."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        raise FingerprintsMissing(path) from None
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _lock:
        cached = _loaded.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            document = outside.loads(Path(path).read_bytes())
        except (OSError, ValueError) as exc:
            raise InvalidDatabase(f"{path} is not readable JSON: {exc}") from None
        found = parse(document)
        _loaded[path] = (stamp, found)
        return found
