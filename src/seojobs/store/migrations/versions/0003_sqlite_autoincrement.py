"""sqlite autoincrement: ids are never handed out twice

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

Without AUTOINCREMENT, SQLite gives a new row the highest id in the table plus one: once the
newest rows were deleted (a project with its jobs, a user, a schedule, jobs pruned after the
retention period), their ids went to the next rows, and a client still holding an old id read
someone else's job. AUTOINCREMENT keeps the highest id ever used in ``sqlite_sequence``.

SQLite cannot add AUTOINCREMENT to a table, so each table is rebuilt (the documented "make
other kinds of table schema changes" procedure): new table, rows copied with their ids,
old table dropped, new one renamed, its indexes and triggers created again. Copying the rows
with their ids sets the table's ``sqlite_sequence`` row to the highest id present, so new ids
start above it. Ids of rows deleted *before* this upgrade left no trace that SQLite kept, so
an id above every remaining one, deleted before the upgrade, can still be handed out once.

Dropping a parent table with foreign keys enforced would run its ON DELETE CASCADE and
empty the child tables, so the rebuild refuses to run unless ``seojobs.store.migrate`` has
turned ``PRAGMA foreign_keys`` off (SQLite ignores the pragma inside a transaction, so the
migration cannot do it itself); it checks every foreign key before it commits.

PostgreSQL's id columns are bigserial sequences, which never go back: nothing to do there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Tables whose ids leave the server (API bodies, Location headers, cursors, CLI state files).
# job_items and idempotency_keys ids never do, and are left as they are.
TABLES = ("users", "projects", "schedules", "jobs")


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild(autoincrement=True)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild(autoincrement=False)


def _rebuild(*, autoincrement: bool) -> None:
    bind = op.get_bind()
    if bind.exec_driver_sql("PRAGMA foreign_keys").scalar():
        raise RuntimeError(
            "rebuilding tables with PRAGMA foreign_keys=ON would cascade-delete their child "
            "rows: run this migration through `seojobs migrate`"
        )
    for table in TABLES:
        # DROP TABLE takes the table's triggers with it (the final-state guard of 0001).
        triggers = bind.execute(
            sa.text("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = :t"),
            {"t": table},
        ).scalars()
        saved = list(triggers)
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass
        for sql in saved:
            op.execute(sql)
    broken = bind.exec_driver_sql("PRAGMA foreign_key_check").all()
    if broken:
        raise RuntimeError(f"foreign keys broken by the rebuild: {broken}")
