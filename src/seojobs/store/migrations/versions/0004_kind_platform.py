"""kind platform: item dedupe keys and structured items, findings, collected data, usage charges

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UTC = sa.DateTime(timezone=True)
# The quota each indexing kind charged before charges were recorded (services/indexing.py).
OLD_QUOTAS = {"index_submit": "submit", "index_check": "check"}


def _sha256_hex(value: str | None) -> str | None:
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()


def _backfill_keys() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("UPDATE job_items SET key = encode(sha256(convert_to(input, 'UTF8')), 'hex')")
    else:
        raw = bind.connection.driver_connection
        assert raw is not None
        raw.create_function("seojobs_sha256", 1, _sha256_hex)
        op.execute("UPDATE job_items SET key = seojobs_sha256(input)")


def _backfill_charges() -> None:
    # Today's and this month's use must survive the upgrade: charge every existing indexing
    # job the way usage used to be counted (top-level jobs not refused for quota).
    for kind, quota in OLD_QUOTAS.items():
        op.execute(
            sa.text(
                "INSERT INTO usage_charges (user_id, job_id, quota, amount, charged_at) "
                "SELECT projects.user_id, jobs.id, :quota, jobs.items_total, jobs.created_at "
                "FROM jobs JOIN projects ON projects.id = jobs.project_id "
                "WHERE jobs.kind = :kind AND jobs.parent_id IS NULL "
                "AND NOT (jobs.state = 'failed' AND jobs.error_code = 'quota_exceeded')"
            ).bindparams(quota=quota, kind=kind)
        )


def upgrade() -> None:
    op.add_column("job_items", sa.Column("key", sa.String(length=64), nullable=True))
    op.add_column("job_items", sa.Column("data", sa.JSON(), nullable=True))
    _backfill_keys()
    op.create_index("uq_job_items_job_key", "job_items", ["job_id", "key"], unique=True)
    op.create_index("ix_job_items_outcome", "job_items", ["job_id", "outcome", "seq"])
    op.create_table(
        "findings",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("job_id", BigId, nullable=False),
        sa.Column("item_id", BigId, nullable=True),
        sa.Column("code", sa.String(length=100), nullable=False),
        sa.Column("severity", sa.String(length=20), nullable=False),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.Column("created_at", UTC, nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_findings_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["item_id"],
            ["job_items.id"],
            name=op.f("fk_findings_item_id_job_items"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_findings")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_findings_job_code", "findings", ["job_id", "code", "id"])
    op.create_index("ix_findings_item", "findings", ["item_id"])
    op.create_table(
        "collections",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("project_id", BigId, nullable=False),
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.Column("subject", sa.String(length=500), nullable=False),
        sa.Column("job_id", BigId, nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("committed", sa.Boolean(), nullable=False),
        sa.Column("collected_at", UTC, nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_collections_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_collections_job_id_jobs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_collections")),
        sa.UniqueConstraint("job_id", "subject", name=op.f("uq_collections_job_id_subject")),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_collections_latest",
        "collections",
        ["project_id", "kind", "subject", "committed", "id"],
    )
    op.create_table(
        "usage_charges",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("user_id", BigId, nullable=False),
        sa.Column("job_id", BigId, nullable=True),
        sa.Column("quota", sa.String(length=100), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("charged_at", UTC, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_usage_charges_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_usage_charges_job_id_jobs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_charges")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_usage_charges_user", "usage_charges", ["user_id", "quota", "charged_at"])
    _backfill_charges()


def downgrade() -> None:
    op.drop_table("usage_charges")
    op.drop_table("collections")
    op.drop_table("findings")
    op.drop_index("ix_job_items_outcome", table_name="job_items")
    op.drop_index("uq_job_items_job_key", table_name="job_items")
    op.drop_column("job_items", "data")
    op.drop_column("job_items", "key")
