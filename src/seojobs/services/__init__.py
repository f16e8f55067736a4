"""Use cases: create, read and cancel jobs; users, projects and schedules. No HTTP, no SQL."""

from seojobs.services.core import NotFound, Services

__all__ = ["NotFound", "Services"]
