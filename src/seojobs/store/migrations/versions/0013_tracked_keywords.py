"""tracked keywords and prompts, and collection schedules (issue 29.1)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _project_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["project_id"], ["projects.id"], name=f"fk_{table}_project_id_projects", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "tracked_keywords",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("project_id", BigId, nullable=False),
        sa.Column("keyword", sa.String(200), nullable=False),
        sa.Column("location", sa.String(200), nullable=False),
        sa.Column("language", sa.String(20), nullable=False),
        sa.Column("device", sa.String(20), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _project_fk("tracked_keywords"),
        sa.PrimaryKeyConstraint("id", name="pk_tracked_keywords"),
        sa.UniqueConstraint("project_id", "key", name="uq_tracked_keywords_project_id_key"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "tracked_prompts",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("project_id", BigId, nullable=False),
        sa.Column("prompt", sa.String(400), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _project_fk("tracked_prompts"),
        sa.PrimaryKeyConstraint("id", name="pk_tracked_prompts"),
        sa.UniqueConstraint("project_id", "key", name="uq_tracked_prompts_project_id_key"),
        sqlite_autoincrement=True,
    )
    # SQLite may rebuild the table: it keeps AUTOINCREMENT (schedule ids leave the server).
    with op.batch_alter_table("schedules", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(
            sa.Column("collection", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("schedules", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_column("collection")
    op.drop_table("tracked_prompts")
    op.drop_table("tracked_keywords")
