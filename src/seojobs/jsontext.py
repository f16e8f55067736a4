"""JSON text of what is stored (results, findings, collected data, a kind's rows): orjson, in C,
where it can; the standard library where orjson refuses.

A site audit page's result (about 2.5 KB) took ``json.dumps`` about 9x orjson's time, and
every stored value is encoded twice (``seojobs.outside.storable``'s look, then the column):
JSON was about a tenth of an audit's CPU per page (bench/audit.py --profile). What orjson
refuses, the standard library writes as before: keys that are not strings (JSON writes them
as strings), integers past 64 bits. One difference is deliberate: a NaN or an infinity (a
provider's answer may hold one; Python's ``json.loads`` reads them) is written as ``null``,
valid JSON on both stores, where ``json.dumps`` wrote ``NaN``, which PostgreSQL refuses."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson


def dumps(value: Any) -> str:
    """``value`` as compact JSON text (non-ASCII kept as it is)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))


def _finite(value: Any) -> Any:
    """``value`` with each NaN and infinity None (for the standard library's path)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
