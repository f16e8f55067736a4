"""site audit pages: the audit's page table (``pagetable.AuditPageRecord``), with its
in-link counts: the site audit's own branch of seojobs' migration chain

Revision ID: sa01
Revises:
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "sa01"
down_revision = None
branch_labels = ("site_audit",)
depends_on = "0006"

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Databases migrated before the table moved beside the kind got it from seojobs' 0006
    # (now empty): they keep it, rows and all.
    if sa.inspect(op.get_bind()).has_table("audit_pages"):
        return
    op.create_table(
        "audit_pages",
        sa.Column("job_id", BigId, nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("final_url", sa.Text(), nullable=True),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("depth", sa.Integer(), nullable=True),
        sa.Column("response_ms", sa.Integer(), nullable=True),
        sa.Column("redirects", sa.Integer(), nullable=True),
        sa.Column("content_type", sa.String(length=200), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("h1", sa.Text(), nullable=True),
        sa.Column("canonical", sa.Text(), nullable=True),
        sa.Column("indexable", sa.Boolean(), nullable=False),
        sa.Column("indexability_reason", sa.String(length=50), nullable=True),
        sa.Column("words", sa.Integer(), nullable=True),
        sa.Column("content_hash", sa.String(length=64), nullable=True),
        sa.Column("in_links", sa.Integer(), nullable=False),
        sa.Column("out_links", sa.Integer(), nullable=False),
        sa.Column("external_links", sa.Integer(), nullable=False),
        sa.Column("issues", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_audit_pages_job_id_jobs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", "seq", name="pk_audit_pages"),
    )


def downgrade() -> None:
    op.drop_table("audit_pages")
