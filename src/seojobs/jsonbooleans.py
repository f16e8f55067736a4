"""``true`` and ``false`` are not numbers: where a JSON Schema expects one, they are refused.

pydantic's lax mode reads a boolean as 1 or 0 for an ``int`` or ``float`` field; JSON Schema's
``integer`` and ``number`` do not match a boolean, so the published document and the server
disagreed (``"max_depth": true`` was taken as 1). Refusing them in each model would take a
validator per field, and a validator in front of ``int`` hides an optional field's bounds from
the document; so the check reads the schema instead, the one the document publishes, and
applies to any model and any kind's params, a plug-in's included, without their help.

:func:`booleans_as_numbers` lists where a document holds a boolean that its schema admits
only as a number. The API's input gate runs it on every body, :meth:`Kind.validate_new` on
every kind's params.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

Loc = tuple[str | int, ...]
MESSAGE: Final = "must be a number, not true or false"
_NUMBERS: Final = frozenset({"integer", "number"})


class Schema:
    """A JSON Schema read once for many documents: its definitions (``$defs``, or an OpenAPI
    document's ``components.schemas``) and which parts of it may hold a number."""

    def __init__(self, schema: dict[str, Any], defs: dict[str, Any] | None = None) -> None:
        self.root = schema
        self.defs: dict[str, Any] = schema.get("$defs", {}) if defs is None else defs
        self._numeric: dict[int, bool] = {}

    def resolve(self, node: Any) -> dict[str, Any]:
        while isinstance(node, dict) and "$ref" in node:
            node = self.defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
        return node if isinstance(node, dict) else {}

    def holds_numbers(self, node: dict[str, Any]) -> bool:
        """Whether a number may appear anywhere under ``node``: elsewhere there is nothing to
        check (a list of 10,000 URLs is not walked)."""
        key = id(node)
        if key not in self._numeric:
            self._numeric[key] = False  # a recursive schema ends here
            self._numeric[key] = bool(_NUMBERS & _types(node)) or any(
                self.holds_numbers(self.resolve(part)) for part in _parts(node)
            )
        return self._numeric[key]

    def booleans_as_numbers(self, value: Any, loc: Loc = ()) -> list[Loc]:
        """Where ``value`` holds ``true``/``false`` that the schema admits only as a number
        (each prefixed by ``loc``), sorted."""
        return sorted(self._walk(self.root, value, loc), key=lambda at: [str(p) for p in at])

    def _walk(self, node: Any, value: Any, loc: Loc) -> set[Loc]:
        node = self.resolve(node)
        kind = _json_type(value)
        if kind is None or not self.holds_numbers(node):
            return set()
        found = self._own(node, value, loc, kind)
        for part in node.get("allOf", ()):
            found |= self._walk(part, value, loc)
        alternatives = [self.resolve(b) for b in node.get("anyOf", node.get("oneOf", ()))]
        takers = [b for b in alternatives if _may_take(b, kind)]
        if takers:  # refused only where no alternative that could take the value takes it
            found |= set.intersection(*(self._walk(b, value, loc) for b in takers))
        return found

    def _own(self, node: dict[str, Any], value: Any, loc: Loc, kind: str) -> set[Loc]:
        found: set[Loc] = set()
        if kind == "boolean":
            types = _types(node)
            if types and "boolean" not in types and _NUMBERS & types:
                found.add(loc)
        elif kind == "object":
            properties = node.get("properties", {})
            extra = node.get("additionalProperties")
            for key, item in value.items():
                sub = properties.get(key, extra if isinstance(extra, dict) else None)
                if sub is not None:
                    found |= self._walk(sub, item, (*loc, key))
        else:
            prefix = node.get("prefixItems", ())
            rest = node.get("items")
            for index, item in enumerate(value):
                sub = prefix[index] if index < len(prefix) else rest
                if isinstance(sub, dict):
                    found |= self._walk(sub, item, (*loc, index))
        return found


def _types(node: dict[str, Any]) -> set[str]:
    found = node.get("type")
    return {found} if isinstance(found, str) else set(found or ())


def _parts(node: dict[str, Any]) -> Iterator[Any]:
    """The schemas directly under ``node``."""
    for combined in ("anyOf", "oneOf", "allOf", "prefixItems"):
        yield from node.get(combined, ())
    yield from node.get("properties", {}).values()
    for single in ("items", "additionalProperties"):
        if isinstance(node.get(single), dict):
            yield node[single]


def _json_type(value: Any) -> str | None:
    """The JSON types worth walking: booleans, and the containers that may hold one."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return None


def _may_take(node: dict[str, Any], kind: str) -> bool:
    """Whether an alternative could take a value of ``kind`` (pydantic reads a boolean as a
    number: such an alternative would take it)."""
    types = _types(node)
    return not types or kind in types or (kind == "boolean" and bool(_NUMBERS & types))


def value_at(document: Any, loc: Loc) -> Any:
    """The value ``loc`` names in ``document``."""
    for part in loc:
        document = document[part]
    return document


def booleans_as_numbers(value: Any, schema: dict[str, Any]) -> list[Loc]:
    """:meth:`Schema.booleans_as_numbers` of a schema read for one document."""
    return Schema(schema).booleans_as_numbers(value)
