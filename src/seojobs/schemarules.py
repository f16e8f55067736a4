"""JSON Schema for the rules a params model's validator states across its fields ("give a
location or a point", "seeds or a url, not both"), read as the validators read them: a field
is given when it is present and not null, and a list when it is not empty.

JSON Schema's ``required`` alone is met by ``"location": null`` or ``"keywords": []``, which
the validators count as not given: a request valid by the published document was refused
(schemathesis sent ``{"location": null, "longitude": 2.3}`` to a local rank check's
schedule). The schedule and collection bodies state their "exactly one of" with it too
(``seojobs.api.projects_models``, ``seojobs.services.collection_config``)."""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import Any

NOT_NULL: dict[str, Any] = {"not": {"type": "null"}}
NULL: dict[str, Any] = {"type": "null"}  # absent or null: not given


def given(*fields: str, lists: Collection[str] = (), **others: dict[str, Any]) -> dict[str, Any]:
    """Every one of ``fields`` given (a list in ``lists`` with one item at least); ``others``:
    more property constraints of the same branch (``latitude=NULL``: not given)."""
    properties = {
        field: {**NOT_NULL, "minItems": 1} if field in lists else NOT_NULL for field in fields
    }
    # A copy of its own: a document's post-processing may change a schema in place.
    return copy.deepcopy({"required": list(fields), "properties": {**properties, **others}})
