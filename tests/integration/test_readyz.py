"""/readyz is probed every few seconds: it answers without writing to the log."""

from __future__ import annotations

import logging

import pytest

from tests.api_helpers import api
from tests.conftest import make_settings


def test_readyz_logs_nothing(store_url: str, caplog: pytest.LogCaptureFixture) -> None:
    with api(make_settings(store_url)) as running:
        client = running.client()
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            answers = [client.get("/readyz") for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert answers[0].json()["status"] == "ready"
    said = [r for r in caplog.records if r.name.startswith(("alembic", "seojobs"))]
    assert said == [], [r.getMessage() for r in said]
