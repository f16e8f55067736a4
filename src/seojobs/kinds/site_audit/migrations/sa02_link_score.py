"""site audit link score: each audit page's internal link score (issue 30.3), on the site
audit's own branch of the migration chain

Revision ID: sa02
Revises: sa01
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "sa02"
down_revision = "sa01"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A table made by the old 0006 from a newer declaration may have it already.
    columns = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("audit_pages")}
    if "link_score" in columns:
        return
    op.add_column("audit_pages", sa.Column("link_score", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audit_pages") as batch:
        batch.drop_column("link_score")
