"""audit pages: moved to the site audit's own migrations (kinds/site_audit/migrations)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03

This revision created the ``audit_pages`` table until the site audit came to own it. It stays,
empty, so that the chain after it and the databases that passed it keep their history; the
site audit's revision ``sa01`` depends on it and creates the table where it is missing.
"""

from __future__ import annotations

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
