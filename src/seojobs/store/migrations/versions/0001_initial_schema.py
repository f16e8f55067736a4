"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "leaders",
        sa.Column("name", sa.String(length=50), nullable=False),
        sa.Column("owner", sa.String(length=100), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leaders")),
    )
    op.create_table(
        "users",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("api_key_hash", sa.String(length=64), nullable=False),
        sa.Column("rate_limit", sa.String(length=50), nullable=True),
        sa.Column("quotas", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("api_key_hash", name=op.f("uq_users_api_key_hash")),
    )
    op.create_table(
        "projects",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_projects_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
        sa.UniqueConstraint("user_id", "name", name=op.f("uq_projects_user_id_name")),
    )
    op.create_table(
        "schedules",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column(
            "project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("interval_seconds", sa.Float(), nullable=True),
        sa.Column("cron", sa.String(length=200), nullable=True),
        sa.Column("start_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_tick_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(interval_seconds IS NULL) <> (cron IS NULL)",
            name=op.f("ck_schedules_one_of_interval_or_cron"),
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_schedules_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schedules")),
        sa.UniqueConstraint("project_id", "name", name=op.f("uq_schedules_project_id_name")),
    )
    with op.batch_alter_table("schedules", schema=None) as batch_op:
        batch_op.create_index("ix_schedules_due", ["enabled", "next_tick_at"], unique=False)

    op.create_table(
        "jobs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column(
            "project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=True),
        sa.Column("run_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.String(length=100), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("rescue_count", sa.Integer(), nullable=False),
        sa.Column("error_code", sa.String(length=100), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("items_total", sa.Integer(), nullable=False),
        sa.Column("items_done", sa.Integer(), nullable=False),
        sa.Column("items_failed", sa.Integer(), nullable=False),
        sa.Column("counters", sa.JSON(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("parent_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column(
            "schedule_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("schedule_tick", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "(state IN ('completed', 'failed')) = (completed_at IS NOT NULL)",
            name=op.f("ck_jobs_completed_at_iff_final"),
        ),
        sa.CheckConstraint(
            "state IN ('pending', 'processing', 'completed', 'failed')",
            name=op.f("ck_jobs_state_known"),
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["jobs.id"], name=op.f("fk_jobs_parent_id_jobs"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_jobs_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["schedules.id"],
            name=op.f("fk_jobs_schedule_id_schedules"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
        sa.UniqueConstraint(
            "project_id", "idempotency_key", name=op.f("uq_jobs_project_id_idempotency_key")
        ),
        sa.UniqueConstraint(
            "schedule_id", "schedule_tick", name=op.f("uq_jobs_schedule_id_schedule_tick")
        ),
    )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index("ix_jobs_claim", ["state", "priority", "run_at", "id"], unique=False)
        batch_op.create_index("ix_jobs_lease", ["state", "lease_expires_at"], unique=False)
        batch_op.create_index("ix_jobs_parent", ["parent_id"], unique=False)
        batch_op.create_index("ix_jobs_project", ["project_id", "id"], unique=False)
        batch_op.create_index("ix_jobs_prune", ["completed_at"], unique=False)
        batch_op.create_index("ix_jobs_worker", ["worker_id"], unique=False)

    op.create_table(
        "job_items",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("input", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("outcome", sa.String(length=50), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error_code", sa.String(length=100), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "state IN ('pending', 'done', 'failed')", name=op.f("ck_job_items_state_known")
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_job_items_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_items")),
        sa.UniqueConstraint("job_id", "seq", name=op.f("uq_job_items_job_id_seq")),
    )
    with op.batch_alter_table("job_items", schema=None) as batch_op:
        batch_op.create_index("ix_job_items_open", ["job_id", "state", "seq"], unique=False)

    _create_final_state_guard()


# A job in `completed` or `failed` never changes again. The store's statements already exclude
# final rows; this trigger makes the database refuse any statement that forgets to.
GUARDED = "state, error_code, error_message, completed_at, result, counters, attempt, worker_id"


def _create_final_state_guard() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            """
            CREATE FUNCTION seojobs_refuse_final_update() RETURNS trigger AS $$
            BEGIN
                RAISE EXCEPTION 'job % is % and cannot change', OLD.id, OLD.state
                    USING ERRCODE = 'check_violation';
            END;
            $$ LANGUAGE plpgsql
            """
        )
        op.execute(
            f"""
            CREATE TRIGGER jobs_final_state_guard BEFORE UPDATE OF {GUARDED} ON jobs
            FOR EACH ROW WHEN (OLD.state IN ('completed', 'failed'))
            EXECUTE FUNCTION seojobs_refuse_final_update()
            """
        )
    else:
        op.execute(
            f"""
            CREATE TRIGGER jobs_final_state_guard BEFORE UPDATE OF {GUARDED} ON jobs
            FOR EACH ROW WHEN OLD.state IN ('completed', 'failed')
            BEGIN SELECT RAISE(ABORT, 'job is final and cannot change'); END
            """
        )


def _drop_final_state_guard() -> None:
    op.execute(
        "DROP TRIGGER IF EXISTS jobs_final_state_guard"
        + (" ON jobs" if op.get_bind().dialect.name == "postgresql" else "")
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS seojobs_refuse_final_update()")


def downgrade() -> None:
    _drop_final_state_guard()
    with op.batch_alter_table("job_items", schema=None) as batch_op:
        batch_op.drop_index("ix_job_items_open")

    op.drop_table("job_items")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_jobs_worker")
        batch_op.drop_index("ix_jobs_prune")
        batch_op.drop_index("ix_jobs_project")
        batch_op.drop_index("ix_jobs_parent")
        batch_op.drop_index("ix_jobs_lease")
        batch_op.drop_index("ix_jobs_claim")

    op.drop_table("jobs")
    with op.batch_alter_table("schedules", schema=None) as batch_op:
        batch_op.drop_index("ix_schedules_due")

    op.drop_table("schedules")
    op.drop_table("projects")
    op.drop_table("users")
    op.drop_table("leaders")
