"""users: unique names, and disabled users

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

A database made before this has let two users share a name. The oldest keeps it; each later
one is renamed ``NAME-ID`` (its id, so the new name is free and says which user it is), and
each rename is printed, so the operator can tell the owners. Keys, projects and jobs are
untouched: every user still signs in with the same key.
"""

from __future__ import annotations

import sys

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

NAME_LENGTH = 200


def _free_name(name: str, user_id: int, taken: set[str]) -> str:
    suffix = f"-{user_id}"
    candidate = name[: NAME_LENGTH - len(suffix)] + suffix
    while candidate in taken:  # "alice-7" was someone's own name already
        suffix += "x"
        candidate = name[: NAME_LENGTH - len(suffix)] + suffix
    return candidate


def _rename_duplicates() -> None:
    bind = op.get_bind()
    users = sa.table("users", sa.column("id", sa.Integer), sa.column("name", sa.String))
    rows = bind.execute(sa.select(users.c.id, users.c.name).order_by(users.c.id)).all()
    taken = {name for _id, name in rows}
    seen: set[str] = set()
    for user_id, name in rows:
        if name not in seen:
            seen.add(name)
            continue
        new = _free_name(name, user_id, taken)
        taken.add(new)
        bind.execute(sa.update(users).where(users.c.id == user_id).values(name=new))
        print(
            f"migration 0005: user {user_id} renamed {name!r} -> {new!r} (user names are "
            "unique now; the oldest user kept the name; its API key is unchanged)",
            file=sys.stderr,
        )


def upgrade() -> None:
    op.add_column("users", sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))
    _rename_duplicates()
    op.create_index("ix_users_name", "users", ["name"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_users_name", table_name="users")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("disabled_at")
