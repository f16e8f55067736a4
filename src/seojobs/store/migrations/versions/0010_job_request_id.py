"""the request id (X-Request-ID) a job was made under, for its worker's log lines

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable, no default: adding it is a catalogue change on both stores, whatever the
    # number of jobs (no table rewrite).
    op.add_column("jobs", sa.Column("request_id", sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("request_id")
