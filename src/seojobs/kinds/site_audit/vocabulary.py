"""schema.org's vocabulary, offline: which types exist and which properties each may have.

``schemaorg.json`` beside this module is a pinned subset of the vocabulary (types, their
parents, the properties each declares), made by ``scripts/schemaorg_vocabulary.py`` from the
npm package schema-dts 2.1.0, which is generated from schema.org's published vocabulary. The
vocabulary is schema.org's, under CC BY-SA 3.0 (https://schema.org/docs/terms.html). It is
read from the package, never fetched at run time.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

from seojobs.kinds.site_audit.richresults import item_nodes, types_of

SCHEMA_ORG = ("schema.org", "schema:")


@functools.cache
def _vocabulary() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("schemaorg.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def known_type(name: str) -> bool:
    return name in _vocabulary()["types"]


@functools.cache
def properties_of(name: str) -> frozenset[str]:
    """Every property a ``name`` item may have: its own and its ancestors' (empty for a
    type the vocabulary lacks)."""
    vocabulary = _vocabulary()
    bases, own = vocabulary["bases"], vocabulary["properties"]
    found: set[str] = set()
    todo = list(vocabulary["types"].get(name, ()))
    seen: set[str] = set()
    while todo:
        base = todo.pop()
        if base in seen:
            continue
        seen.add(base)
        found.update(own.get(base, ()))
        todo += bases.get(base, ())
    return frozenset(found)


def _schema_org_context(value: Any) -> bool:
    """Whether a JSON-LD block's ``@context`` is schema.org's (else its terms are not)."""
    context = value.get("@context") if isinstance(value, dict) else None
    if isinstance(context, str):
        return any(s in context for s in SCHEMA_ORG)
    if isinstance(context, list):
        return any(isinstance(c, str) and "schema.org" in c for c in context)
    if isinstance(context, dict):
        vocab = context.get("@vocab")
        return isinstance(vocab, str) and "schema.org" in vocab
    return False


def _term(name: str) -> str:
    return name.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]


def unknown(values: list[Any], label: str = "block") -> Iterator[dict[str, str]]:
    """What schema.org items of parsed JSON-LD ``values`` name that the vocabulary lacks:
    ``{"item", "type"}`` for an unknown type, ``{"item", "type", "property"}`` for a
    property none of the item's types has."""
    blocks = [v for v in values if _schema_org_context(v)]
    for path, node in item_nodes(blocks, label):
        names = types_of(node)
        if not names:
            continue
        missing = [n for n in names if not known_type(n)]
        for name in missing:
            yield {"item": path, "type": name}
        if missing:
            continue  # an unknown type's properties cannot be judged
        allowed = frozenset().union(*(properties_of(n) for n in names))
        for key in node:
            if not key.startswith("@") and _term(key) not in allowed:
                yield {"item": path, "type": "/".join(names), "property": _term(key)}
