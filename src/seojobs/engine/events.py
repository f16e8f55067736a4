"""Operator log lines: one line per event, ``event=NAME key=value ...`` (logfmt), so a line
reads as text and parses with a split. Values with spaces, quotes or ``=`` are JSON-quoted."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

_NEEDS_QUOTES = re.compile(r'[\s"=]')


def _value(value: Any) -> str:
    if isinstance(value, bool | int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list | tuple | set):
        return ",".join(str(v) for v in value) or "-"
    text = "-" if value is None else str(value)
    if not text or _NEEDS_QUOTES.search(text):
        return json.dumps(text, ensure_ascii=False)
    return text


def logfmt(name: str, **fields: Any) -> str:
    return " ".join([f"event={name}", *(f"{k}={_value(v)}" for k, v in fields.items())])


def event(logger: logging.Logger, name: str, level: int = logging.INFO, **fields: Any) -> None:
    # Checked first: a worker logs two events per job, and formatting a line nobody keeps was
    # a third of the event loop's CPU on short jobs (bench/queue.py, profiled).
    if logger.isEnabledFor(level):
        logger.log(level, "%s", logfmt(name, **fields))
