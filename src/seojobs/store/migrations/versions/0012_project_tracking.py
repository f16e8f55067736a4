"""what a project tracks: its domain, brand names and competitors (issue 29.1)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("projects") as batch:
        batch.add_column(sa.Column("domain", sa.String(253), nullable=True))
        batch.add_column(sa.Column("brand_names", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("competitors", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("projects") as batch:
        batch.drop_column("competitors")
        batch.drop_column("brand_names")
        batch.drop_column("domain")
