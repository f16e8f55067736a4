"""`seojobs users` against a real database: unique names, list, rotate-key (the old key stops
working, once the API's 5 s auth cache lets go), disable; each command names its database
with the password masked."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from seojobs.cli import app
from tests.api_helpers import V1, api
from tests.conftest import make_settings
from tests.waiting import wait_until


def users(url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["users", *args], env={"SEOJOBS_DATABASE_URL": url})
    return result.exit_code, result.stdout, result.stderr


def with_password(url: str) -> str:
    """The same database named with a password (trust auth ignores it), for the masking."""
    return url.replace("postgres@", "postgres:s3cret@", 1)


def test_names_are_unique_and_users_are_listed(store_url: str) -> None:
    url = with_password(store_url)
    code, out, err = users(url, "create", "alice", "--json")
    assert code == 0, err
    alice = json.loads(out)
    code, out, err = users(url, "create", "alice")
    assert code == 1 and "a user named 'alice' exists" in err and "API key" not in out
    assert users(url, "create", "bob", "--rate-limit", "30")[0] == 0
    code, out, err = users(url, "list", "--json")
    listed = [json.loads(line) for line in out.splitlines()]
    assert [(u["name"], u["rate_limit"]) for u in listed] == [
        ("alice", None),
        ("bob", "30/minute"),
    ]
    assert listed[0]["user_id"] == alice["user_id"]
    assert all(u["disabled_at"] is None for u in listed)
    assert err.startswith("database: ") and "s3cret" not in err + out
    if "postgres" in url:
        assert "postgres:***@" in err


def test_a_rotated_or_disabled_key_stops_working(store_url: str) -> None:
    with api(make_settings(store_url)) as running:
        code, out, _err = users(store_url, "create", "carol", "--json")
        old = json.loads(out)["api_key"]
        jobs = f"{V1}/index-check/jobs"

        def answer(key: str) -> int:
            return int(running.client().get(jobs, headers={"Authorization": key}).status_code)

        assert answer(old) == 200  # and now cached
        code, out, err = users(store_url, "rotate-key", "carol", "--json")
        assert code == 0, err
        new = json.loads(out)["api_key"]
        assert new != old and answer(new) == 200
        wait_until(lambda: answer(old) == 401)  # within the auth cache's 5 s

        code, out, _err = users(store_url, "disable", "carol")
        assert code == 0 and "disabled" in out
        wait_until(lambda: answer(new) == 401)
        code, out, _err = users(store_url, "list")
        assert "\tcarol\tdisabled " in out
        assert users(store_url, "disable", "nobody")[0] == 1
        assert "no user named 'nobody'" in users(store_url, "rotate-key", "nobody")[2]
