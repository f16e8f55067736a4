"""Migration 0005 on a database that already has two users of one name: the oldest keeps it,
the later ones are renamed NAME-ID (said on stderr), keys unchanged; names are unique after."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from seojobs.store import migrate
from seojobs.store.db import Database
from seojobs.store.tables import users
from tests.schema_0002 import TABLES, _user


@pytest.fixture
def at_0004(at_0002: Database) -> Iterator[Database]:
    db = at_0002  # alice (1) and bob (2)
    migrate.upgrade(db, "0004")
    with db.write() as conn:
        conn.execute(
            TABLES["users"].insert(),
            [_user(4, "alice"), _user(5, "alice"), _user(6, "alice-5"), _user(7, "bob")],
        )
    yield db


def test_duplicate_names_are_renamed_and_names_become_unique(
    at_0004: Database, capfd: pytest.CaptureFixture[str]
) -> None:
    migrate.upgrade(at_0004)
    with at_0004.read() as conn:
        rows = conn.execute(select(users.c.id, users.c.name, users.c.api_key_hash)).all()
    names = {user_id: name for user_id, name, _key in rows}
    assert names == {1: "alice", 2: "bob", 4: "alice-4", 5: "alice-5x", 6: "alice-5", 7: "bob-7"}
    assert all(key == f"{user_id:064x}" for user_id, _name, key in rows)  # keys kept
    said = capfd.readouterr().err
    assert "user 4 renamed 'alice' -> 'alice-4'" in said and "user 7 renamed 'bob'" in said
    with pytest.raises(IntegrityError), at_0004.write() as conn:
        conn.execute(TABLES["users"].insert(), [_user(8, "bob")])
