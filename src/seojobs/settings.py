"""Server settings: one pydantic-settings object, built by the caller and passed in.

Nothing reads the environment at import time; ``Settings()`` does, when a process starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


def _default_database_url() -> str:
    return f"sqlite:///{Path.cwd() / 'seojobs.db'}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SEOJOBS_", extra="ignore")

    database_url: str = Field(
        default_factory=_default_database_url,
        description="SQLite file (default: ./seojobs.db) or postgresql://… for scale-out.",
    )
    rate_limit: str = "120/minute"
    rate_limit_storage: str = "memory://"
    allow_private_networks: bool = False
    day_seconds: float = Field(default=86400, gt=0)
    lease_seconds: float = Field(
        default=30, gt=0, description="How long a silent worker keeps a job before rescue."
    )
    max_rescues: int = Field(default=3, ge=0)
    retention_days: float = Field(default=30, gt=0, description="Finished jobs are pruned after.")
    poll_interval: float = Field(default=1.0, gt=0, description="Worker poll fallback, seconds.")
    maintenance_interval: float = Field(default=1.0, gt=0)
    worker_concurrency: int = Field(default=10, ge=1)
    plugins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Extra modules to import for kinds (comma separated), besides entry points.",
    )

    @field_validator("plugins", mode="before")
    @classmethod
    def _split_plugins(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("database_url")
    @classmethod
    def _normalise_url(cls, value: str) -> str:
        # Users paste libpq URLs; SQLAlchemy needs the driver named.
        for prefix in ("postgres://", "postgresql://"):
            if value.startswith(prefix):
                return "postgresql+psycopg://" + value[len(prefix) :]
        return value
