"""HTTP surfaces: v1 indexing, v2 SpeedyIndex-compatible, projects API, dashboard, health."""

from seojobs.api.app import create_app

__all__ = ["create_app"]
