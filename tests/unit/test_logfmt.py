"""The JSON log format: one object per line, the traceback kept, nothing but ASCII."""

from __future__ import annotations

import json
import logging
import sys

from seojobs.engine.events import event
from seojobs.logfmt import JsonFormatter


def _record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            info = sys.exc_info()
    return logging.LogRecord("seojobs.worker", logging.ERROR, __file__, 1, message, args, info)


def test_a_record_is_one_json_line_with_its_traceback() -> None:
    line = JsonFormatter().format(_record("job %s failed: %s", 7, "bad\nnews é", exc=True))
    assert "\n" not in line and line.isascii()
    record = json.loads(line)
    assert record["message"] == "job 7 failed: bad\nnews é"
    assert record["level"] == "ERROR" and record["logger"] == "seojobs.worker"
    assert record["ts"].endswith("+00:00")
    assert "Traceback" in record["exception"] and "ValueError: boom" in record["exception"]
    assert "exception" not in json.loads(JsonFormatter().format(_record("fine")))


def test_an_event_below_the_loggers_level_is_not_formatted() -> None:
    class Loud:
        def __str__(self) -> str:
            raise AssertionError("formatted although nobody keeps the line")

    logger = logging.getLogger("seojobs.test.quiet")
    logger.setLevel(logging.WARNING)
    event(logger, "job_start", job=Loud())  # INFO: skipped before any value is formatted
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        event(logger, "job_end", logging.WARNING, job=7, code="a b", ok=True, items=[1, 2])
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records] == ['event=job_end job=7 code="a b" ok=True items=1,2']
