"""webhooks: endpoints, the deliveries outbox and its attempts (issue 27)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
When = sa.DateTime(timezone=True)


def _fk(table: str, column: str, target: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}", ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("user_id", BigId, nullable=False),
        sa.Column("project_id", BigId, nullable=True),
        sa.Column("job_id", BigId, nullable=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", sa.Text(), nullable=False),
        sa.Column("filters", sa.JSON(), nullable=True),
        sa.Column("description", sa.String(length=500), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.Column("secret", sa.String(length=200), nullable=False),
        sa.Column("previous_secret", sa.String(length=200), nullable=True),
        sa.Column("previous_secret_until", When, nullable=True),
        sa.Column("failing_since", When, nullable=True),
        sa.Column("created_at", When, nullable=False),
        sa.Column("updated_at", When, nullable=False),
        _fk("webhook_endpoints", "user_id", "users", "CASCADE"),
        _fk("webhook_endpoints", "project_id", "projects", "CASCADE"),
        _fk("webhook_endpoints", "job_id", "jobs", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_endpoints"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_webhook_endpoints_user", "webhook_endpoints", ["user_id", "id"])
    op.create_index("ix_webhook_endpoints_job", "webhook_endpoints", ["job_id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("endpoint_id", BigId, nullable=False),
        sa.Column("event_type", sa.String(length=100), nullable=False),
        sa.Column("job_id", BigId, nullable=True),
        sa.Column("msg_id", sa.String(length=64), nullable=True),
        sa.Column("payload", sa.Text(), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", When, nullable=False),
        sa.Column("locked_until", When, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", When, nullable=False),
        sa.Column("updated_at", When, nullable=False),
        sa.CheckConstraint(
            "state IN ('pending', 'delivered', 'failed')",
            name="ck_webhook_deliveries_state_known",
        ),
        _fk("webhook_deliveries", "endpoint_id", "webhook_endpoints", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_deliveries"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["state", "next_attempt_at"])
    op.create_index("ix_webhook_deliveries_endpoint", "webhook_deliveries", ["endpoint_id", "id"])
    op.create_table(
        "webhook_attempts",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("delivery_id", BigId, nullable=False),
        sa.Column("attempted_at", When, nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("response_head", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _fk("webhook_attempts", "delivery_id", "webhook_deliveries", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_attempts"),
    )
    op.create_index("ix_webhook_attempts_delivery", "webhook_attempts", ["delivery_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_webhook_attempts_delivery", table_name="webhook_attempts")
    op.drop_table("webhook_attempts")
    op.drop_index("ix_webhook_deliveries_endpoint", table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_due", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index("ix_webhook_endpoints_job", table_name="webhook_endpoints")
    op.drop_index("ix_webhook_endpoints_user", table_name="webhook_endpoints")
    op.drop_table("webhook_endpoints")
