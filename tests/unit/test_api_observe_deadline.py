"""The request id, the count and the database deadline in one ASGI layer (``Observe`` with a
``DatabaseDeadline``; issue 23.6): a request still unanswered when the database is found
down gets the 503 at once, with its id, counted as a 503, and what its handler sends later is
dropped; a slow request on a database that answers is left alone; exempt paths pass."""

from __future__ import annotations

import asyncio
from typing import Any

from seojobs import telemetry
from seojobs.api.dbgate import DatabaseDeadline, DatabaseGate
from seojobs.api.observe import Observe

SLOW = 0.02  # the deadline's slow_after, seconds


def _app(answered: asyncio.Event, release: asyncio.Event) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await release.wait()  # a handler held in the database driver
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"late"})
        answered.set()

    return app


async def _request(layer: Observe, path: str, sent: list[dict[str, Any]]) -> None:
    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "GET", "path": path, "headers": [], "query_string": b""}
    await layer(scope, receive, send)


def _count(status: int) -> float:
    value = telemetry.REGISTRY.get_sample_value(
        "seojobs_http_requests_total",
        {"method": "GET", "route": "unmatched", "status": str(status)},
    )
    return value or 0.0


async def _run(answers: bool, path: str = "/v1/projects") -> tuple[list[dict[str, Any]], bool]:
    async def probe(_timeout: float) -> bool:
        return answers

    answered, release = asyncio.Event(), asyncio.Event()
    gate = DatabaseGate(probe, retry_every=60)
    layer = Observe(_app(answered, release), DatabaseDeadline(gate, slow_after=SLOW))
    sent: list[dict[str, Any]] = []
    task = asyncio.create_task(_request(layer, path, sent))
    if answers is False and path != "/healthz":
        while len(sent) < 2:  # answered 503 while the handler still waits
            await asyncio.sleep(SLOW / 4)
    else:
        await asyncio.sleep(SLOW * 3)  # past the deadline; the database answers
    release.set()
    await asyncio.wait_for(task, 5)
    return sent, answered.is_set()


async def test_a_request_found_waiting_on_a_dead_database_gets_503_with_its_id() -> None:
    before = _count(503)
    sent, _handler_ran = await _run(answers=False)
    start, body = sent[0], sent[1]
    assert start["status"] == 503
    headers = dict(start["headers"])
    assert headers[b"retry-after"] == b"60"
    assert len(headers[b"x-request-id"]) == 24
    assert b"database_unavailable" in body["body"]
    assert len(sent) == 2  # the handler's late answer was dropped
    assert _count(503) == before + 1


async def test_a_slow_request_on_a_database_that_answers_is_left_alone() -> None:
    before = _count(200)
    sent, handler_ran = await _run(answers=True)
    assert handler_ran and sent[0]["status"] == 200 and sent[1]["body"] == b"late"
    assert b"x-request-id" in dict(sent[0]["headers"])
    assert _count(200) == before + 1


async def test_an_exempt_path_is_never_refused() -> None:
    sent, handler_ran = await _run(answers=False, path="/healthz")
    assert handler_ran and sent[0]["status"] == 200


async def test_every_request_gets_its_deadline_from_the_one_timer() -> None:
    """One timer serves every open request: requests that start after an earlier one was
    answered, and while another is open, are still refused once slow on a dead database."""
    release = asyncio.Event()
    deadline = DatabaseDeadline(DatabaseGate(_dead, retry_every=60), slow_after=SLOW)
    layer = Observe(_app(asyncio.Event(), release), deadline)
    release.set()  # the first request is answered at once, before its deadline
    fast: list[dict[str, Any]] = []
    await _request(layer, "/v1/projects", fast)
    release.clear()
    hung: list[list[dict[str, Any]]] = [[], []]
    tasks = []
    for sent in hung:  # then two that wait on the driver, started SLOW / 2 apart
        tasks.append(asyncio.create_task(_request(layer, "/v1/projects", sent)))
        await asyncio.sleep(SLOW / 2)
    while any(len(sent) < 2 for sent in hung):
        await asyncio.sleep(SLOW / 4)
    release.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert [fast[0]["status"], *(sent[0]["status"] for sent in hung)] == [200, 503, 503]


async def _dead(_timeout: float) -> bool:
    return False
