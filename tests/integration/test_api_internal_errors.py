"""An unexpected error in a request answers problem+json 500 with an error id; what failed
goes to the log under that id, never to the client (issue 25.3)."""

from __future__ import annotations

import logging

import httpx
import pytest

from seojobs.api.app import create_app
from tests.conftest import make_settings

pytestmark = pytest.mark.stores("sqlite")

SECRET = "SELECT password FROM users WHERE id = 42"


async def test_an_unexpected_error_is_a_problem_naming_an_error_id_found_in_the_log(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(make_settings(store_url), run_worker=False)

    async def broken() -> None:  # a route with a bug: its error text must not reach clients
        raise RuntimeError(SECRET)

    app.add_api_route("/v1/broken", broken)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    with caplog.at_level(logging.ERROR):
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            answer = await client.get("/v1/broken")
    assert answer.status_code == 500
    assert answer.headers["content-type"].startswith("application/problem+json")
    body = answer.json()
    assert body["type"].endswith("/internal_error") and body["status"] == 500
    assert SECRET not in answer.text
    error_id = body["error_id"]
    assert len(error_id) == 12 and error_id in body["detail"]
    logged = [r for r in caplog.records if error_id in r.getMessage()]
    assert logged and logged[0].exc_info is not None
    assert SECRET in str(logged[0].exc_info[1])
