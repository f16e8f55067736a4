"""What comes from outside (pages, headers, provider answers, RDAP, DNS, certificates), made
safe to keep: text both stores can store, and JSON of bounded depth (issue 25.1, 25.2).

**Storable text.** PostgreSQL refuses a NUL character in ``text`` (and ``\\u0000`` in JSON it
must read), and psycopg cannot encode a lone surrogate (``"\\ud800"`` in a JSON answer, a
filename's surrogate escape) as UTF-8; SQLite keeps both. So one rule applies where a running
job's data enters the store, not per column: :func:`storable` replaces each of them with
U+FFFD (the replacement character, what a decoder writes for what it could not read) in every
string of a value, keys included, however deep. The worker applies it to every change a job
writes (items, their results and errors, findings, collections, kind tables) and to the job's
own result and error (``seojobs.engine.worker``), so no kind needs to remember it.

**Bounded JSON.** :func:`loads` parses JSON that came from outside. A document nested deeper
than :data:`MAX_DEPTH` (JSON-LD in a page, an RDAP answer, a provider's answer) is refused
with ``ValueError``, like any other malformed JSON, instead of ``RecursionError`` in the
parser or in whatever walks the result later (the store's JSON encoder included).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Final

import orjson

from seojobs import jsontext

REPLACEMENT: Final = "\ufffd"
# Real documents nest a few levels (JSON-LD graphs, RDAP entities within entities: ~10).
MAX_DEPTH: Final = 64
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# bytes.translate table: digits stay "0", anything else is a space (loads' test for long numbers)
_DIGITS = bytes(0x30 if 0x30 <= c <= 0x39 else 0x20 for c in range(256))
_LONG_NUMBER = b"0" * 19  # the shortest integer literal that may not fit in 64 bits
_NOT_READ: Any = object()


def text(value: str) -> str:
    """``value`` with NUL and lone surrogates replaced (the same object when it has none)."""
    if value.isascii():
        return value.replace("\x00", REPLACEMENT) if "\x00" in value else value
    return _UNSTORABLE.sub(REPLACEMENT, value)


def storable(value: Any) -> Any:
    """``value`` with every string in it made storable: in dicts (keys too), lists, tuples and
    dataclass instances (a record of changes); anything else is kept. Unchanged parts are the
    same objects, and a clean value (nearly every one) is returned as it is after one look
    in C (:func:`_clean`)."""
    if _clean(value):
        return value
    return _walk(value)


def storable_json(value: Any) -> str:
    """``jsontext.dumps(storable(value))``, encoding once when ``value`` is storable already
    (nearly always): the look :func:`storable` takes is the encoding itself (a group of
    results written as JSON documents, ``store/results.record``, encoded them twice)."""
    try:
        encoded = orjson.dumps(value)
    except TypeError:  # a lone surrogate, or what orjson does not write (jsontext.dumps's)
        return jsontext.dumps(storable(value))
    if b"\\u0000" in encoded:
        return jsontext.dumps(storable(value))
    return encoded.decode()


def _fields(value: Any) -> Any:
    """The JSON encoder's fallback in :func:`_clean`: a tuple's subclass (a named tuple, which
    :func:`_walk` walks) as its items; anything else it cannot encode is something
    :func:`_walk` keeps as it is (None). orjson encodes dataclass instances itself, field by
    field."""
    return list(value) if isinstance(value, tuple) else None


def _clean(value: Any) -> bool:
    """Whether no string :func:`_walk` would reach holds a NUL or a lone surrogate, found
    by encoding ``value`` as JSON in C (the walk in Python cost an index check's worker ~10 %
    of its CPU per URL, bench/check.py --layers; orjson, not ``json.dumps``: a site audit
    page's result in a ninth of the time). orjson refuses a lone surrogate and writes a NUL
    as ``\\u0000``; a text that spells ``\\u0000`` itself, a key that is not a string, or an
    integer past 64 bits only sends the value to the walk. False when unsure."""
    try:
        encoded = orjson.dumps(value, default=_fields)
    except (TypeError, ValueError, RecursionError):
        return False
    return b"\\u0000" not in encoded


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        cleaned: dict[Any, Any] = {}
        same = True
        for key, item in value.items():
            new_key, new_item = _walk(key), _walk(item)
            same = same and new_key is key and new_item is item
            cleaned[new_key] = new_item
        return value if same else cleaned
    if isinstance(value, list | tuple):
        items = [_walk(v) for v in value]
        if all(a is b for a, b in zip(value, items, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields: dict[str, Any] = {}
        for field in dataclasses.fields(value):
            old = getattr(value, field.name)
            new = _walk(old)
            if new is not old:
                fields[field.name] = new
        return dataclasses.replace(value, **fields) if fields else value
    return value


def depth(value: Any) -> int:
    """How deeply ``value`` nests lists and dicts (a scalar: 0), found without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        elif not isinstance(node, list):
            continue
        level += 1
        deepest = max(deepest, level)
        stack.extend((child, level) for child in node if isinstance(child, dict | list))
    return deepest


def _openers(document: str | bytes) -> int:
    if isinstance(document, str):
        return document.count("[") + document.count("{")
    return document.count(b"[") + document.count(b"{")


def _orjson_or_not_read(document: bytes) -> Any:
    try:
        return orjson.loads(document)
    except orjson.JSONDecodeError:
        return _NOT_READ


def loads(document: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``document`` parsed as JSON; ``ValueError`` when it is not JSON or nests deeper than
    ``max_depth`` lists and objects."""
    found = _NOT_READ
    if isinstance(document, bytes) and _LONG_NUMBER not in document.translate(_DIGITS):
        # orjson (a provider's answer in a third of the time) where it reads what the
        # standard library reads: it refuses NaN, infinities, lone surrogates, a BOM, UTF-16
        # and nesting past 1,024 (read below, as before), but would make an integer past 64
        # bits a float, so a document with 19 digits in a row is never handed to it.
        found = _orjson_or_not_read(document)
    if found is _NOT_READ:
        try:
            found = json.loads(document)
        except RecursionError:
            raise ValueError(f"JSON nested deeper than {max_depth} levels") from None
    # Each level opens with a "[" or "{", so a document with no more of them than the bound
    # (strings' count too: still an upper bound) cannot nest deeper; counted in C, where the
    # walk of the parsed value cost a provider answer as much again as its parse.
    if _openers(document) > max_depth and depth(found) > max_depth:
        raise ValueError(f"JSON nested deeper than {max_depth} levels")
    return found
