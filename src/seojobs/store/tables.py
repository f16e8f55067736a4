"""SQLAlchemy Core tables. Alembic migrations in ``migrations/`` must produce exactly these
(``tests/integration/test_migrations.py`` compares them on both dialects)."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

from seojobs.store.coltypes import UTCDateTime

# Stable constraint names so migrations and models agree on both dialects.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL gets bigint identities.
BigId = BigInteger().with_variant(Integer(), "sqlite")
# ``sqlite_autoincrement`` on the tables whose ids leave the server (API bodies, Location
# headers, cursors, CLI state files): without it SQLite hands out max(id) + 1, so the ids of
# the newest rows, once deleted or pruned, went to someone else's rows. PostgreSQL's sequences
# never go back. job_items and idempotency_keys ids stay inside the server.

ITEM_STATES = ("pending", "done", "failed")

users = Table(
    "users",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    # sha256 of the API key; the key itself is shown once and never stored.
    Column("api_key_hash", String(64), nullable=False, unique=True),
    Column("rate_limit", String(50), nullable=True),
    Column("quotas", JSON, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    # Set by `seojobs users disable`: the key stops working (after the API's auth cache).
    Column("disabled_at", UTCDateTime, nullable=True),
    sqlite_autoincrement=True,
)
Index("ix_users_name", users.c.name, unique=True)

projects = Table(
    "projects",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("user_id", BigId, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("is_default", Boolean, nullable=False, default=False),
    Column("created_at", UTCDateTime, nullable=False),
    # What the project tracks (issue 29.1): its site, its brand's names, its competitors
    # ([{domain, names}]); deleted with the project's row.
    Column("domain", String(253), nullable=True),
    Column("brand_names", JSON, nullable=True),
    Column("competitors", JSON, nullable=True),
    UniqueConstraint("user_id", "name"),
    sqlite_autoincrement=True,
)

schedules = Table(
    "schedules",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("project_id", BigId, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("kind", String(100), nullable=False),
    Column("params", JSON, nullable=False),
    # Either a fixed interval (in seconds, already scaled by SEOJOBS_DAY_SECONDS for "days")
    # anchored at start_at, or a cron expression evaluated in UTC.
    Column("interval_seconds", Float, nullable=True),
    Column("cron", String(200), nullable=True),
    Column("start_at", UTCDateTime, nullable=False),
    Column("next_tick_at", UTCDateTime, nullable=False),
    Column("enabled", Boolean, nullable=False, default=True),
    Column("created_at", UTCDateTime, nullable=False),
    # A project's collection of one kind (``GET/PUT /v1/projects/{id}/collection``, issue
    # 29.1): its params are only what the collection sets, and the project's tracked fields
    # are added when each tick fires, so that a keyword tracked since is collected too.
    Column("collection", Boolean, nullable=False, default=False, server_default=false()),
    CheckConstraint("(interval_seconds IS NULL) <> (cron IS NULL)", name="one_of_interval_or_cron"),
    UniqueConstraint("project_id", "name"),
    sqlite_autoincrement=True,
)
Index("ix_schedules_due", schedules.c.enabled, schedules.c.next_tick_at)

# What a project tracks besides its own fields (issue 29.1): keywords in their market, and
# prompts for AI search. ``key`` is sha256 of the normalised value (a keyword's casefolded text
# with its market), so each is tracked once; both go with the project.
tracked_keywords = Table(
    "tracked_keywords",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("project_id", BigId, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("keyword", String(200), nullable=False),
    Column("location", String(200), nullable=False),  # a location code's digits, or a name
    Column("language", String(20), nullable=False),
    Column("device", String(20), nullable=False),
    Column("key", String(64), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("project_id", "key"),
    sqlite_autoincrement=True,
)

tracked_prompts = Table(
    "tracked_prompts",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("project_id", BigId, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("prompt", String(400), nullable=False),
    Column("key", String(64), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("project_id", "key"),
    sqlite_autoincrement=True,
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("project_id", BigId, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(100), nullable=False),
    Column("params", JSON, nullable=False),
    Column("state", String(20), nullable=False),
    Column("priority", Integer, nullable=False, default=0),
    Column("title", String(500), nullable=True),
    Column("run_at", UTCDateTime, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("started_at", UTCDateTime, nullable=True),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("completed_at", UTCDateTime, nullable=True),
    # Lease: the claim's fencing token is ``attempt``; every write by a worker names it.
    Column("attempt", Integer, nullable=False, default=0),
    Column("worker_id", String(100), nullable=True),
    Column("lease_expires_at", UTCDateTime, nullable=True),
    Column("rescue_count", Integer, nullable=False, default=0),
    Column("error_code", String(100), nullable=True),
    Column("error_message", Text, nullable=True),
    Column("items_total", Integer, nullable=False, default=0),
    Column("items_done", Integer, nullable=False, default=0),
    Column("items_failed", Integer, nullable=False, default=0),
    # Per-outcome item counts ({"indexed": 3, "not_indexed": 1}); written only by the lease holder.
    Column("counters", JSON, nullable=False),
    Column("result", JSON, nullable=True),
    Column("parent_id", BigId, ForeignKey("jobs.id", ondelete="SET NULL"), nullable=True),
    Column("idempotency_key", String(200), nullable=True),
    Column("schedule_id", BigId, ForeignKey("schedules.id", ondelete="SET NULL"), nullable=True),
    Column("schedule_tick", UTCDateTime, nullable=True),
    # The X-Request-ID of the request that made the job (a schedule's or a follow-up's: the
    # one in effect then, if any): the worker's log lines for the job carry it.
    Column("request_id", String(128), nullable=True),
    CheckConstraint(
        "state IN ('pending', 'processing', 'completed', 'failed')", name="state_known"
    ),
    CheckConstraint(
        "(state IN ('completed', 'failed')) = (completed_at IS NOT NULL)",
        name="completed_at_iff_final",
    ),
    # Exactly one job per (schedule, tick), whatever the number of leaders that raced.
    UniqueConstraint("schedule_id", "schedule_tick"),
    UniqueConstraint("project_id", "idempotency_key"),
    sqlite_autoincrement=True,
)
# The claim query's index: pending jobs ordered as they are taken.
Index("ix_jobs_claim", jobs.c.state, jobs.c.priority, jobs.c.run_at, jobs.c.id)
Index("ix_jobs_lease", jobs.c.state, jobs.c.lease_expires_at)
Index("ix_jobs_worker", jobs.c.worker_id)
Index("ix_jobs_project", jobs.c.project_id, jobs.c.id)
# Counts per state and kind read from the index alone; a project's jobs in one state.
Index("ix_jobs_project_state", jobs.c.project_id, jobs.c.state, jobs.c.kind)
Index("ix_jobs_parent", jobs.c.parent_id)
Index("ix_jobs_prune", jobs.c.completed_at)

job_items = Table(
    "job_items",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("job_id", BigId, ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("input", Text, nullable=False),
    # sha256 of the item's dedupe key (its input unless the kind names another): an item is
    # added to a job once however often it is found (a crawler meets a URL on many pages).
    Column("key", String(64), nullable=True),
    # A structured item's value (``input`` holds it as canonical JSON text).
    Column("data", JSON, nullable=True),
    Column("state", String(20), nullable=False),
    Column("outcome", String(50), nullable=True),
    Column("result", JSON, nullable=True),
    Column("error_code", String(100), nullable=True),
    Column("error_message", Text, nullable=True),
    Column("finished_at", UTCDateTime, nullable=True),
    CheckConstraint("state IN ('pending', 'done', 'failed')", name="state_known"),
    UniqueConstraint("job_id", "seq"),
)
# An index rather than a constraint: SQLite adds it to an existing table without a rebuild.
Index("uq_job_items_job_key", job_items.c.job_id, job_items.c.key, unique=True)
Index("ix_job_items_open", job_items.c.job_id, job_items.c.state, job_items.c.seq)
Index("ix_job_items_outcome", job_items.c.job_id, job_items.c.outcome, job_items.c.seq)

# What a job found, per item or for the whole job (an audit's broken links, missing titles).
findings = Table(
    "findings",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("job_id", BigId, ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("item_id", BigId, ForeignKey("job_items.id", ondelete="CASCADE"), nullable=True),
    Column("code", String(100), nullable=False),
    Column("severity", String(20), nullable=False),
    Column("data", JSON, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    sqlite_autoincrement=True,
)
# "How many of each code" and "every finding of code X" for one job, both by index.
Index("ix_findings_job_code", findings.c.job_id, findings.c.code, findings.c.id)
Index("ix_findings_item", findings.c.item_id)

# Collected data that outlives its job: per (project, kind, subject), one row per job that
# collected it. Rows become visible (``committed``) when their job completes, so reads serve
# the latest completed collection and never a half-done one; older rows are the history.
collections = Table(
    "collections",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("project_id", BigId, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(100), nullable=False),
    Column("subject", String(500), nullable=False),
    # SET NULL: pruning a finished job keeps what it collected.
    Column("job_id", BigId, ForeignKey("jobs.id", ondelete="SET NULL"), nullable=True),
    Column("data", JSON, nullable=False),
    Column("committed", Boolean, nullable=False, default=False),
    Column("collected_at", UTCDateTime, nullable=False),
    UniqueConstraint("job_id", "subject"),
    sqlite_autoincrement=True,
)
Index(
    "ix_collections_latest",
    collections.c.project_id,
    collections.c.kind,
    collections.c.subject,
    collections.c.committed,
    collections.c.id,
)

# Quota use: one row per charge, so usage survives deleted projects and pruned jobs and can
# be summed over any period (a UTC day, a calendar month).
usage_charges = Table(
    "usage_charges",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("user_id", BigId, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("job_id", BigId, ForeignKey("jobs.id", ondelete="SET NULL"), nullable=True),
    Column("quota", String(100), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("charged_at", UTCDateTime, nullable=False),
    sqlite_autoincrement=True,
)
Index(
    "ix_usage_charges_user",
    usage_charges.c.user_id,
    usage_charges.c.quota,
    usage_charges.c.charged_at,
)

# HTTP Idempotency-Key records: the first answer to a POST, replayed to retries for 24 h.
idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("user_id", BigId, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("key", String(255), nullable=False),
    Column("fingerprint", String(64), nullable=False),  # sha256 of method, path and body
    Column("state", String(20), nullable=False),  # in_flight | done
    Column("status_code", Integer, nullable=True),
    Column("body", Text, nullable=True),
    Column("headers", JSON, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    UniqueConstraint("user_id", "key"),
)
Index("ix_idempotency_keys_expires", idempotency_keys.c.expires_at)

# One row per maintenance role; whoever holds an unexpired lease is the leader.
leaders = Table(
    "leaders",
    metadata,
    Column("name", String(50), primary_key=True),
    Column("owner", String(100), nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
)

# Dashboard sign-ins. The cookie carries a random token; only its sha256 is stored, so a
# leaked table signs nobody in. ``key_hash`` is the user's API key hash at sign-in: rotating
# the key ends the user's dashboard sessions too. Signing out deletes the row.
dashboard_sessions = Table(
    "dashboard_sessions",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("user_id", BigId, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("key_hash", String(64), nullable=False),
    Column("csrf_token", String(64), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
)
Index("ix_dashboard_sessions_expires", dashboard_sessions.c.expires_at)

# Secrets the server makes for itself and every process shares (the dashboard cookie's
# signing key when SEOJOBS_DASHBOARD_SECRET is unset).
server_secrets = Table(
    "server_secrets",
    metadata,
    Column("name", String(50), primary_key=True),
    Column("value", String(200), nullable=False),
)

# -- webhooks (issue 27) ---------------------------------------------------------------------
# A user's endpoints. ``events`` is ``*`` or the subscribed types between commas
# (",job.completed,job.failed,"), so that the outbox's INSERT ... SELECT can match a type with
# LIKE on both dialects. ``job_id`` marks a one-off endpoint: a job's own ``webhook_url``.
# The secret signs, so it is kept as it is (like a provider key); it is shown once.
# A project's site audit settings (issue 30.4): what its audits get unless their request says
# otherwise (``kinds.site_audit.params.AuditSettings``, only the fields set). One row per
# project that has any; it goes with the project.
audit_settings = Table(
    "audit_settings",
    metadata,
    Column(
        "project_id",
        BigId,
        ForeignKey("projects.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    Column("settings", JSON, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

webhook_endpoints = Table(
    "webhook_endpoints",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("user_id", BigId, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("project_id", BigId, ForeignKey("projects.id", ondelete="CASCADE"), nullable=True),
    Column("job_id", BigId, ForeignKey("jobs.id", ondelete="CASCADE"), nullable=True),
    Column("url", Text, nullable=False),
    Column("events", Text, nullable=False),
    Column("filters", JSON, nullable=True),
    Column("description", String(500), nullable=True),
    Column("enabled", Boolean, nullable=False),
    Column("disabled_reason", Text, nullable=True),
    Column("secret", String(200), nullable=False),
    Column("previous_secret", String(200), nullable=True),
    Column("previous_secret_until", UTCDateTime, nullable=True),
    Column("failing_since", UTCDateTime, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    sqlite_autoincrement=True,
)
Index("ix_webhook_endpoints_user", webhook_endpoints.c.user_id, webhook_endpoints.c.id)
Index("ix_webhook_endpoints_job", webhook_endpoints.c.job_id)

# The outbox: one row per (endpoint, event), written in the transaction that made the event
# (a job's terminal state). ``payload`` is the body as first sent, so that every retry sends
# the same bytes under the same ``msg_id``. ``locked_until``: a dispatcher's claim.
webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "endpoint_id",
        BigId,
        ForeignKey("webhook_endpoints.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("event_type", String(100), nullable=False),
    Column("job_id", BigId, nullable=True),
    Column("msg_id", String(64), nullable=True),
    Column("payload", Text, nullable=True),
    Column("state", String(20), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UTCDateTime, nullable=False),
    Column("locked_until", UTCDateTime, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    CheckConstraint("state IN ('pending', 'delivered', 'failed')", name="state_known"),
    sqlite_autoincrement=True,
)
Index("ix_webhook_deliveries_due", webhook_deliveries.c.state, webhook_deliveries.c.next_attempt_at)
Index("ix_webhook_deliveries_endpoint", webhook_deliveries.c.endpoint_id, webhook_deliveries.c.id)

webhook_attempts = Table(
    "webhook_attempts",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "delivery_id",
        BigId,
        ForeignKey("webhook_deliveries.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("attempted_at", UTCDateTime, nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("latency_ms", Float, nullable=False),
    Column("response_head", Text, nullable=True),
    Column("error", Text, nullable=True),
)
Index("ix_webhook_attempts_delivery", webhook_attempts.c.delivery_id, webhook_attempts.c.id)
