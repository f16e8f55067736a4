"""The database gate's probe timeout is the operator's ``database_probe_timeout`` (its behaviour,
a frozen PostgreSQL answered 503 on time, is tests/e2e/test_outages.py's)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.api_helpers import api
from tests.conftest import make_settings


def test_the_gate_waits_for_a_new_connection_as_long_as_the_setting_says(store_url: str) -> None:
    with api(make_settings(store_url, database_probe_timeout=2.5)) as running:
        gate = getattr(running.app.state, "database_gate", None)
    if store_url.startswith("sqlite"):
        assert gate is None  # a local file cannot hang the way a server can
    else:
        assert gate is not None
        assert gate.probe_timeout == 2.5


@pytest.mark.stores("sqlite")
@pytest.mark.parametrize("value", [0, -1, 31])
def test_a_probe_timeout_out_of_bounds_is_refused_naming_the_setting(
    sqlite_url: str, value: float
) -> None:
    with pytest.raises(ValidationError, match="database_probe_timeout"):
        make_settings(sqlite_url, database_probe_timeout=value)
