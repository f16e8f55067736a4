"""JSON types as the published schema states them, where pydantic would convert between them.

pydantic's lax mode reads ``true`` as 1 for an ``int`` field, ``0`` as ``false`` for a
``bool``, ``"5"`` as 5 and ``"yes"`` as ``true``; JSON Schema's ``integer``, ``number`` and
``boolean`` match none of these, so the published document and the server disagreed
(``"max_depth": true`` was taken as 1, ``"check_external_links": 0`` as false). Refusing them
in each model would take a validator per field (and a validator in front of ``int`` hides an
optional field's bounds from the document), so the check reads the schema instead, the one the
document publishes, and applies to any model and any kind's params, a plug-in's included,
without their help.

:meth:`Schema.coercions` lists where a document holds a value of a JSON type its schema does not
admit there but pydantic would convert. Everything else (a string where an object is expected,
a number out of range) is left to the model, which refuses it with its own message. The API's
input gate runs it on every body, :meth:`Kind.validate_new` on every kind's params.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

Loc = tuple[str | int, ...]
Found = dict[Loc, str]  # where -> what is wrong
# A value of the key's JSON type that pydantic would convert into these.
_CONVERTED: Final[dict[str, frozenset[str]]] = {
    "boolean": frozenset({"integer", "number"}),
    "number": frozenset({"boolean"}),
    "string": frozenset({"integer", "number", "boolean"}),
}
_CONVERTIBLE: Final = frozenset().union(*_CONVERTED.values())
_ORDER: Final = ("integer", "number", "boolean")
_SPELLED: Final = {
    "boolean": "true or false",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
}


class Schema:
    """A JSON Schema read once for many documents: its definitions (``$defs``, or an OpenAPI
    document's ``components.schemas``) and which parts of it expect a number or a boolean."""

    def __init__(self, schema: dict[str, Any], defs: dict[str, Any] | None = None) -> None:
        self.root = schema
        self.defs: dict[str, Any] = schema.get("$defs", {}) if defs is None else defs
        self._convertible: dict[int, bool] = {}

    def resolve(self, node: Any) -> dict[str, Any]:
        while isinstance(node, dict) and "$ref" in node:
            node = self.defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
        return node if isinstance(node, dict) else {}

    def expects_convertible(self, node: dict[str, Any]) -> bool:
        """Whether a number or a boolean is expected anywhere under ``node``: elsewhere there
        is nothing to check (a list of 10,000 URLs is not walked)."""
        key = id(node)
        if key not in self._convertible:
            self._convertible[key] = False  # a recursive schema ends here
            self._convertible[key] = bool(_CONVERTIBLE & _types(node)) or any(
                self.expects_convertible(self.resolve(part)) for part in _parts(node)
            )
        return self._convertible[key]

    def coercions(self, value: Any, loc: Loc = ()) -> list[tuple[Loc, str]]:
        """Where ``value`` holds what pydantic would convert into the type the schema expects
        there, with what is wrong (each location prefixed by ``loc``), sorted."""
        found = self._walk(self.root, value, loc)
        return sorted(found.items(), key=lambda item: [str(p) for p in item[0]])

    def _walk(self, node: Any, value: Any, loc: Loc) -> Found:
        node = self.resolve(node)
        kind = _json_type(value)
        if kind is None or not self.expects_convertible(node):
            return {}
        found = self._own(node, value, loc, kind)
        for part in node.get("allOf", ()):
            found.update(self._walk(part, value, loc))
        alternatives = [self.resolve(b) for b in node.get("anyOf", node.get("oneOf", ()))]
        takers = [b for b in alternatives if _may_take(b, kind)]
        if takers:  # refused only where no alternative that could take the value takes it
            each = [self._walk(b, value, loc) for b in takers]
            found.update({at: why for at, why in each[0].items() if all(at in o for o in each)})
        return found

    def _own(self, node: dict[str, Any], value: Any, loc: Loc, kind: str) -> Found:
        types = _types(node)
        if kind in _CONVERTED:
            if types and not _admits(types, kind) and types & _CONVERTED[kind]:
                expected = " or ".join(_SPELLED[t] for t in _ORDER if t in types)
                return {loc: f"must be {expected}, not {_SPELLED[kind]}"}
            return {}
        found: Found = {}
        if kind == "object":
            properties = node.get("properties", {})
            extra = node.get("additionalProperties")
            for key, item in value.items():
                sub = properties.get(key, extra if isinstance(extra, dict) else None)
                if sub is not None:
                    found.update(self._walk(sub, item, (*loc, key)))
        else:
            prefix = node.get("prefixItems", ())
            rest = node.get("items")
            for index, item in enumerate(value):
                sub = prefix[index] if index < len(prefix) else rest
                if isinstance(sub, dict):
                    found.update(self._walk(sub, item, (*loc, index)))
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
    """The JSON type of ``value``, for the types worth walking (null is not)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return None


def _admits(types: set[str], kind: str) -> bool:
    return kind in types or (kind == "number" and "integer" in types)


def _may_take(node: dict[str, Any], kind: str) -> bool:
    """Whether an alternative could take a value of ``kind``, as is or converted."""
    types = _types(node)
    return not types or _admits(types, kind) or bool(types & _CONVERTED.get(kind, frozenset()))


def value_at(document: Any, loc: Loc) -> Any:
    """The value ``loc`` names in ``document``."""
    for part in loc:
        document = document[part]
    return document


def coercions(value: Any, schema: dict[str, Any]) -> list[tuple[Loc, str]]:
    """:meth:`Schema.coercions` of a schema read for one document."""
    return Schema(schema).coercions(value)
