"""acme notes: the acme plug-in's own table, a branch of seojobs' migration chain

Revision ID: a001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "a001"
down_revision = None
branch_labels = ("acme",)
depends_on = "0004"


def upgrade() -> None:
    op.create_table(
        "acme_notes",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("note", sa.String(length=200), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("acme_notes")
