"""Storage: tables, dialect SQL and migrations. The only package that speaks SQL."""

from seojobs.store.db import Database, connect
from seojobs.store.errors import FinalStateError, StoreError

__all__ = ["Database", "FinalStateError", "StoreError", "connect"]
