"""Use cases: create, read and cancel jobs; users, projects and schedules. No HTTP, no SQL."""

from seojobs.services.core import Conflict, NotFound, Services

__all__ = ["Conflict", "NotFound", "Services"]
