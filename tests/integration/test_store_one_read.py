"""``Database.one_read()``: a dashboard page's several service reads share one transaction
(one checkout, one BEGIN) and read each lookup (``once``) one time; other threads, and the
same thread after the block, get transactions of their own."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import event, text

from seojobs.store.db import Database

pytestmark = pytest.mark.stores("sqlite")


def test_reads_in_one_read_share_a_transaction_and_each_lookup_is_read_once(
    db: Database,
) -> None:
    begun: list[int] = []
    event.listen(db.engine, "begin", lambda conn: begun.append(1))
    computed: list[str] = []

    def lookup(value: str) -> str:
        computed.append(value)
        return value

    def elsewhere() -> None:
        with db.read() as conn:
            conn.execute(text("SELECT 1"))

    with db.one_read():
        for _ in range(3):
            with db.read() as conn:
                conn.execute(text("SELECT 1"))
        assert db.once(("project", 1), lambda: lookup("first")) == "first"
        assert db.once(("project", 1), lambda: lookup("again")) == "first"
        assert db.once(("project", 2), lambda: lookup("other")) == "other"
        with db.one_read():  # nested: the same block
            assert db.once(("project", 1), lambda: lookup("nested")) == "first"
        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()
    assert len(begun) == 2  # the block's one, and the other thread's own
    assert computed == ["first", "other"]

    elsewhere()  # after the block: a transaction of its own, nothing kept
    assert len(begun) == 3
    assert db.once(("project", 1), lambda: lookup("outside")) == "outside"
    assert db.once(("project", 1), lambda: lookup("outside")) == "outside"
    assert computed == ["first", "other", "outside", "outside"]
