"""How the server's processes log: ``SEOJOBS_LOG_FORMAT=plain`` (the default: one readable
line per record) or ``json`` (one JSON object per line, for log shippers): ``ts`` (RFC 3339,
UTC), ``level``, ``logger``, ``message``, and ``exception`` (the traceback) when there is one.
uvicorn's own records (``uvicorn.error``, ``uvicorn.access``) go through the same handler."""

from __future__ import annotations

import json
import logging
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Literal

LogFormat = Literal["plain", "json"]
PLAIN = "%(asctime)s %(levelname)s %(name)s: %(message)s%(request_suffix)s"
# The id of the request (X-Request-ID) or job being served: on every log line written for it.
REQUEST_ID: ContextVar[str | None] = ContextVar("seojobs_request_id", default=None)


class RequestIdFilter(logging.Filter):
    """Puts ``REQUEST_ID`` on each record: ``request_id`` (or None) and ``request_suffix``
    (`` request_id=…`` or empty, for the plain format)."""

    def filter(self, record: logging.LogRecord) -> bool:
        rid = REQUEST_ID.get()
        record.request_id = rid
        record.request_suffix = f" request_id={rid}" if rid else ""
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = getattr(record, "request_id", None)
        if rid:
            entry["request_id"] = rid
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        # ensure_ascii: a log line never carries raw control or non-ASCII bytes.
        return json.dumps(entry, ensure_ascii=True, default=str)


def configure(form: LogFormat, level: int = logging.INFO) -> None:
    """The root logger's one handler (stderr), in ``form``."""
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter() if form == "json" else logging.Formatter(PLAIN))
    logging.basicConfig(level=level, handlers=[handler], force=True)


def logged_internal(logger: logging.Logger, what: str) -> str:
    """Log the exception being handled, with a new error id; return the id (issue 25.3).

    What users see of an unexpected error is a code and a plain message naming this id
    (:func:`internal_message`); the exception itself (an SQL statement and its values, a
    path, a driver's words) goes to the log only, where the id finds it."""
    error_id = uuid.uuid4().hex[:12]
    logger.exception("%s (error id %s)", what, error_id)
    return error_id


def internal_message(logger: logging.Logger, what: str, *, failed: str = "the job") -> str:
    """:func:`logged_internal`, as the plain message users see."""
    error_id = logged_internal(logger, what)
    return f"an internal error stopped {failed} (error id {error_id}); the details are in the log"
