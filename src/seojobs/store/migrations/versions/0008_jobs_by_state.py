"""jobs per project by state and kind (the dashboard's counts, its running jobs)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_project_state", "jobs", ["project_id", "state", "kind"])


def downgrade() -> None:
    op.drop_index("ix_jobs_project_state", table_name="jobs")
