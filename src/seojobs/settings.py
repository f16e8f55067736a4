"""Server settings: one pydantic-settings object, built by the caller and passed in.

Nothing reads the environment at import time; ``Settings()`` does, when a process starts.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    NonNegativeInt,
    PrivateAttr,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)


def _default_database_url() -> str:
    return f"sqlite:///{Path.cwd() / 'seojobs.db'}"


# The rate limiter's storages: this process's memory, or Redis shared by several processes.
STORAGE_SCHEMES = ("memory", "redis", "rediss", "redis+unix")
# The default limits: valid (tests/unit/test_settings_ratelimit.py parses them), so not parsed
# at each start (parsing imports the limits package).
RATE_LIMIT = "120/minute"
AUTH_FAILURE_LIMIT = "30/minute"
DEFAULT_LIMITS = (RATE_LIMIT, AUTH_FAILURE_LIMIT)
# A quota's limit, by the name of the setting that held it before kinds declared their own.
QUOTA_KEYWORD = re.compile(r"quota_[a-z0-9_]+_(?:daily|monthly)")


class QuotaEnvironment(PydanticBaseSettingsSource):
    """``SEOJOBS_QUOTA_<NAME>_DAILY`` / ``_MONTHLY`` into ``quota_limits``, for any quota a kind
    declares (the kinds are not known when the settings are read)."""

    PREFIX = "SEOJOBS_QUOTA_"

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # all of it is in __call__

    def __call__(self) -> dict[str, Any]:
        found = {
            name.upper().removeprefix(self.PREFIX).lower(): value
            for name, value in os.environ.items()
            if name.upper().startswith(self.PREFIX)
            and QUOTA_KEYWORD.fullmatch(name.lower().removeprefix("seojobs_"))
        }
        return {"quota_limits": found} if found else {}


class Environment(PydanticBaseSettingsSource):
    """pydantic-settings' environment source, not walked when no variable of the environment
    names a field: it walked every field's annotation (some 90 fields) whatever the
    environment held, most of the CPU of building the settings (a test process builds
    thousands). What it reads when one does is unchanged."""

    def __init__(self, env: PydanticBaseSettingsSource) -> None:
        super().__init__(env.settings_cls)
        self.env = env

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.env.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        env = self.env
        if (
            not isinstance(env, EnvSettingsSource)
            or env.env_nested_delimiter  # a field's parts are read from variables of their own
            or not _env_names(env).isdisjoint(env.env_vars)
        ):
            return env()
        return {}


_ENV_NAMES: dict[tuple[Any, ...], frozenset[str]] = {}


def _env_names(env: EnvSettingsSource) -> frozenset[str]:
    """Every variable name the environment source reads a field from (as it matches them: in
    lower case unless case-sensitive), per settings class and naming."""
    key = (env.settings_cls, env.env_prefix, env.case_sensitive, env.env_prefix_target)
    found = _ENV_NAMES.get(key)
    if found is None:
        found = _ENV_NAMES[key] = frozenset(
            name
            for field_name, field in env.settings_cls.model_fields.items()
            for _key, name, _complex in env._extract_field_info(field, field_name)
        )
    return found


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SEOJOBS_", extra="ignore")

    database_url: str = Field(
        default_factory=_default_database_url,
        description="SQLite file (default: ./seojobs.db) or postgresql://… for scale-out.",
    )
    database_probe_timeout: float = Field(
        default=1.0,
        gt=0,
        le=30,
        description="PostgreSQL: a request slower than 0.4 s makes the API open a new "
        "connection; no answer within this many seconds and requests get 503 until one comes.",
    )
    # -- rate limits (seojobs.api.ratelimit) ---------------------------------------------
    rate_limit: str = Field(default=RATE_LIMIT, description="Each user's request budget.")
    rate_limit_storage: str = Field(
        default="memory://", description="memory:// (one process) or redis://… (shared)."
    )
    rate_limit_on_storage_error: Literal["open", "closed"] = Field(
        default="open",
        description="When the storage fails: serve unlimited (open) or answer 503 (closed).",
    )
    rate_limit_storage_timeout: float = Field(
        default=0.5, gt=0, description="Bound on one limiter call (connect and answer), s."
    )
    rate_limit_storage_cooldown: float = Field(
        default=5.0, gt=0, description="After a storage failure, skip it this long, seconds."
    )
    rate_limit_key_prefix: str = Field(
        default="seojobs",
        min_length=1,
        pattern=r"^[^\s{}]+$",  # braces are Redis Cluster's hash-tag markers
        description="Prefix of every Redis key: deployments sharing a database stay apart.",
    )
    auth_failure_limit: str = Field(
        default=AUTH_FAILURE_LIMIT, description="Failed authentications per client address."
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Proxies whose X-Forwarded-For is believed (addresses/CIDRs, comma separated).",
    )
    max_body_bytes: int = Field(
        default=22_000_000, gt=0, description="Request body cap (10,000 URLs of 2,048 chars fit)."
    )
    # -- the HTTP server (seojobs.api.protocol): what a client may hold or send -------------
    # 32 KiB: twice uvicorn's h11 and Node's 16 KiB default, room for a proxy's or an SSO's
    # headers in front of us; our own requests need under 1 KiB (a key and a JSON type).
    max_header_bytes: int = Field(
        default=32 * 1024,
        ge=1024,
        description="Request line and headers cap: 431 over it (414 when the URL alone is).",
    )
    header_timeout: float = Field(
        default=10.0, gt=0, description="Seconds for a request line and its headers: 408 after."
    )
    body_timeout: float = Field(
        default=30.0, gt=0, description="A request body silent this many seconds gets 408."
    )
    body_min_rate: float = Field(
        default=500.0,
        ge=0,
        description="Bytes/s a request body must average after its first body_timeout (0: off).",
    )
    dashboard_secret: SecretStr | None = Field(
        default=None,
        description="Signs dashboard cookies; unset: the server makes one, kept in the database.",
    )
    log_format: Literal["plain", "json"] = Field(
        default="plain",
        description="`seojobs serve` / `worker` log lines: plain text, or one JSON object each.",
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description=(
            "GET /metrics asks for `Authorization: Bearer <this>`; unset: it answers loopback "
            "clients only (403 to others)."
        ),
    )
    dashboard_session_hours: float = Field(
        default=12, gt=0, description="A dashboard sign-in lasts this long."
    )
    gc_freeze: bool = Field(
        default=True,
        description=(
            "At startup, move what the process built out of the garbage collector's view "
            "(shorter pauses; `seojobs worker` also makes young collections rarer). Off in the "
            "test suite, which starts many apps in one process."
        ),
    )
    idempotency_ttl_seconds: float = Field(default=86400, gt=0)
    allow_private_networks: bool = False
    day_seconds: float = Field(default=86400, gt=0)
    lease_seconds: float = Field(
        default=30, gt=0, description="How long a silent worker keeps a job before rescue."
    )
    max_rescues: int = Field(default=3, ge=0)
    retention_days: float = Field(default=30, gt=0, description="Finished jobs are pruned after.")
    poll_interval: float = Field(
        default=1.0,
        gt=0,
        description="How often an idle worker looks for jobs nothing woke it for, seconds: a "
        "fallback. Jobs made, released or rescued wake the workers, and an idle worker sleeps "
        "until the soonest delayed job is due.",
    )
    maintenance_interval: float = Field(
        default=1.0,
        gt=0,
        description="The least time between a worker's maintenance passes (rescue, scheduled "
        "starts, cron ticks, pruning: the elected leader's work), seconds. A worker passes when "
        "something it knows of comes due (a lease runs out, a schedule ticks, the leader's "
        "lease is to be renewed or can be taken), when a schedule is made or changed or the "
        "leader resigns, and at least every `SEOJOBS_LEASE_SECONDS`.",
    )
    worker_concurrency: int = Field(default=10, ge=1)
    worker_reserved_slots: int = Field(
        default=1,
        ge=0,
        description=(
            "Slots of each worker that one user's jobs never fill, kept for other users' jobs: "
            "one user runs at most concurrency minus this (at least 1) on a worker at once. "
            "0: one user may take every slot."
        ),
    )
    # -- collection schedules -------------------------------------------------------------
    schedule_min_interval_seconds: float = Field(
        default=60, gt=0, description="The shortest interval a schedule may have."
    )
    schedule_allow_seconds: bool = Field(
        default=False, description="Allow six-field cron expressions (a seconds field)."
    )
    max_schedules_per_user: int = Field(default=100, ge=0)
    # -- fetching (seojobs.fetch) -------------------------------------------------------
    user_agent: str = "seojobs/0.1 (+https://github.com/seojobs/seojobs)"
    fetch_timeout: float = Field(default=15.0, gt=0, description="Read timeout, seconds.")
    fetch_connect_timeout: float = Field(default=5.0, gt=0)
    fetch_max_bytes: int = Field(default=2_000_000, gt=0, description="Body size cap.")
    fetch_max_redirects: int = Field(default=10, ge=0)
    fetch_host_concurrency: int = Field(default=2, ge=1, description="Requests at once per host.")
    fetch_host_delay: float = Field(
        default=0.0, ge=0, description="Pause between requests to a host."
    )
    fetch_dns_ttl: float = Field(
        default=60.0, ge=0, description="Seconds a fetcher keeps a name's addresses (0: none)."
    )
    fetch_ca_file: str | None = Field(
        default=None,
        description=(
            "A PEM file of CA certificates the fetcher trusts besides the system's (a private "
            "CA's sites; the tests' own CA); Chromium trusts them too, with full verification "
            "(the site audit's `render: \"js\"` and web vitals' Lighthouse: an NSS database in "
            "a home folder of its own, removed after the job)."
        ),
    )
    fetch_allow_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Hostnames exempt from the private-network guard (comma separated).",
    )
    # -- providers (seojobs.providers); every base URL is a setting so tests use local fakes
    indexnow_key: str | None = None
    indexnow_key_location: str | None = None
    indexnow_endpoint: str = "https://api.indexnow.org/indexnow"
    google_credentials_file: str | None = None
    google_indexing_base_url: str = "https://indexing.googleapis.com"
    url_inspection_base_url: str = "https://searchconsole.googleapis.com"
    serpapi_key: str | None = None
    serpapi_base_url: str = "https://serpapi.com"
    dataforseo_login: str | None = None
    dataforseo_password: str | None = None
    dataforseo_base_url: str = "https://api.dataforseo.com"
    serper_key: str | None = None
    serper_base_url: str = "https://google.serper.dev"
    # Google Ads API (Keyword Planner): a developer token, an OAuth client and its refresh
    # token (exchanged at the token URL for access tokens), and the account to plan in.
    google_ads_developer_token: str | None = None
    google_ads_client_id: str | None = None
    google_ads_client_secret: str | None = None
    google_ads_refresh_token: str | None = None
    google_ads_customer_id: str | None = Field(
        default=None, description="The Google Ads account (digits; dashes are dropped)."
    )
    google_ads_login_customer_id: str | None = Field(
        default=None, description="The manager account the access goes through, if any."
    )
    google_ads_base_url: str = "https://googleads.googleapis.com"
    google_ads_token_url: str = "https://oauth2.googleapis.com/token"  # noqa: S105 (a URL)
    google_ads_api_version: str = Field(default="v26", pattern=r"^v[0-9]{1,3}$")
    # CrUX API (web_vitals field data): queried only when a key is set.
    crux_api_key: str | None = None
    crux_base_url: str = "https://chromeuxreport.googleapis.com"
    # AI search (kinds.geo_lookup): OpenAI Responses with web_search, Perplexity Sonar.
    openai_api_key: str | None = None
    openai_base_url: str = "https://api.openai.com/v1"
    openai_model: str = Field(default="gpt-5", min_length=1, description="Must take web_search.")
    perplexity_api_key: str | None = None
    perplexity_base_url: str = "https://api.perplexity.ai"
    perplexity_model: str = Field(default="sonar", min_length=1)
    # Gemini with Grounding with Google Search; Anthropic's Messages API with web search.
    # Google's AI Overviews come through the SERP providers' keys (SerpApi, DataForSEO).
    gemini_api_key: str | None = None
    gemini_base_url: str = "https://generativelanguage.googleapis.com/v1beta"
    gemini_model: str = Field(
        default="gemini-2.5-flash", min_length=1, description="Must take the google_search tool."
    )
    anthropic_api_key: str | None = None
    anthropic_base_url: str = "https://api.anthropic.com"
    anthropic_model: str = Field(
        default="claude-sonnet-4-5", min_length=1, description="Must take the web_search tool."
    )
    provider_timeout: float = Field(default=30.0, gt=0)
    provider_retries: int = Field(default=3, ge=0, description="Retries after a 429 or 5xx.")
    provider_backoff: float = Field(default=2.0, ge=0, description="First retry delay, seconds.")
    # -- quotas: each kind declares its own and their default limits (seojobs.engine.quotas)
    quota_limits: dict[str, NonNegativeInt] = Field(
        default_factory=dict,
        description="The deployment's quota limits, overriding the defaults the kinds declare: "
        "one variable per quota, SEOJOBS_QUOTA_<NAME>_DAILY or _MONTHLY (e.g. "
        "SEOJOBS_QUOTA_SUBMIT_DAILY=5000); per-user overrides live on the user.",
    )
    # Values for a kind's own settings model given here by their full names
    # (Settings(rank_check_concurrency=1)): seojobs.engine.kindsettings hands them to the kind.
    kind_overrides: dict[str, Any] = Field(default_factory=dict, exclude=True)
    # The kinds' settings built for these (seojobs.engine.kindsettings.of).
    _kind_built: dict[Any, Any] = PrivateAttr(default_factory=dict)
    plugins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Extra modules to import for kinds (comma separated), besides entry points.",
    )
    # -- webhooks (issue 27) ------------------------------------------------------------
    webhook_retry_schedule: Annotated[list[float], NoDecode] = Field(
        default=[5, 300, 1800, 7200, 18000, 36000],
        description="Seconds before each retry of a webhook delivery (comma separated), with "
        "10% jitter; the delivery fails after the last.",
    )
    webhook_timeout: float = Field(
        default=15.0, gt=0, description="One delivery attempt's timeout, seconds."
    )
    webhook_disable_after_seconds: float = Field(
        default=3 * 86400,
        gt=0,
        description="An endpoint whose deliveries have failed for this long is disabled, "
        "with the reason.",
    )
    webhook_secret_overlap_seconds: float = Field(
        default=86400,
        ge=0,
        description="After a secret rotation, how long the previous secret still signs too.",
    )
    webhook_poll_interval: float = Field(
        default=5.0,
        gt=0,
        description="How often an idle worker looks for due webhook deliveries, seconds: a "
        "fallback, for a claim that ran out (a worker died mid-attempt). New deliveries and "
        "retries wake the workers, and each sleeps until the soonest retry is due.",
    )
    webhook_concurrency: int = Field(
        default=64,
        ge=1,
        le=1000,
        description="Webhook deliveries a worker sends at once, to all endpoints together "
        "(1-1000); also the most it claims at a time.",
    )
    webhook_endpoint_concurrency: int = Field(
        default=32,
        ge=1,
        le=1000,
        description="Of those, at most this many to any one endpoint (1-1000; "
        "SEOJOBS_WEBHOOK_CONCURRENCY when larger), so a slow endpoint holds only its share.",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        quotas = QuotaEnvironment(settings_cls)
        # No .env file named (``Settings(_env_file=...)`` names one): the dotenv source would
        # find nothing, after walking every field's annotation as the environment's source
        # does, some 40 % of the CPU of building the settings (a test process builds
        # thousands).
        environment = Environment(env_settings)
        if getattr(dotenv_settings, "env_file", None) is None:
            return init_settings, environment, quotas, file_secret_settings
        return init_settings, environment, quotas, dotenv_settings, file_secret_settings

    @model_validator(mode="before")
    @classmethod
    def _keywords_of_old(cls, data: Any) -> Any:
        """Settings that moved into the kinds, given by their names of old: a quota's limit
        (``Settings(quota_submit_daily=5)`` as ``SEOJOBS_QUOTA_SUBMIT_DAILY=5``, over it), and
        any other name this model lacks, for a kind's own settings (``kind_overrides``)."""
        if not isinstance(data, dict):
            return data
        unknown = {k: v for k, v in data.items() if k not in cls.model_fields}
        if not unknown:
            return data
        rest = {k: v for k, v in data.items() if k not in unknown}
        quotas = {
            k.removeprefix("quota_"): v for k, v in unknown.items() if QUOTA_KEYWORD.fullmatch(k)
        }
        others = {k: v for k, v in unknown.items() if not QUOTA_KEYWORD.fullmatch(k)}
        rest["quota_limits"] = {**(data.get("quota_limits") or {}), **quotas}
        rest["kind_overrides"] = {**(data.get("kind_overrides") or {}), **others}
        return rest

    @property
    def kind_built(self) -> dict[Any, Any]:
        return self._kind_built

    @field_validator("plugins", "fetch_allow_hosts", "trusted_proxies", mode="before")
    @classmethod
    def _split_plugins(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("webhook_retry_schedule", mode="before")
    @classmethod
    def _split_schedule(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("webhook_retry_schedule")
    @classmethod
    def _schedule(cls, value: list[float]) -> list[float]:
        if any(delay < 0 for delay in value):
            raise ValueError("retry delays are seconds, zero or more")
        return value

    @field_validator("rate_limit", "auth_failure_limit")
    @classmethod
    def _rate(cls, value: str) -> str:
        if value in DEFAULT_LIMITS:
            return value
        # Imported for a limit that is set: the package loads its storage back-ends too
        # (about 0.07 CPU-s), which a worker or `seojobs users` on the defaults never use.
        from limits import parse

        parse(value)  # ValueError naming the bad part, e.g. "30/fortnight"
        return value

    @field_validator("rate_limit_storage")
    @classmethod
    def _storage(cls, value: str) -> str:
        scheme = value.partition("://")[0]
        if scheme not in STORAGE_SCHEMES or "://" not in value:
            raise ValueError(f"must start with one of {', '.join(STORAGE_SCHEMES)} followed by ://")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        # Checked here: uvicorn's proxy middleware would take a typo as a literal host name
        # and silently trust nothing.
        return [str(ipaddress.ip_network(item, strict=False)) for item in value]

    @field_validator("database_url")
    @classmethod
    def _normalise_url(cls, value: str) -> str:
        # Users paste libpq URLs; SQLAlchemy needs the driver named.
        for prefix in ("postgres://", "postgresql://"):
            if value.startswith(prefix):
                return "postgresql+psycopg://" + value[len(prefix) :]
        return value
