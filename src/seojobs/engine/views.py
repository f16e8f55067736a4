"""A kind's dashboard view: how the dashboard shows what the kind collected.

Plain data, declared on the kind (``Kind.view``). The project page renders every kind's latest
collections generically (a table per kind, charts of their numbers); a view names that
section and picks and orders its columns. Without a view, the section is titled after the kind
and shows the first columns its data has. Richer per-kind views build on this declaration.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DashboardView:
    """``title``: the heading of the kind's section ("Rankings"); ``columns``: the values of a
    collection shown, in order, each a top-level key of its data or ``key.sub`` one level down
    (``"scores.performance"``); empty: the first ones found."""

    title: str = ""
    columns: tuple[str, ...] = ()

    def heading(self, kind: str) -> str:
        return self.title or f"{kind}: latest results"

    def pick(self, found: list[str], most: int) -> list[str]:
        """The columns shown, of those ``found`` in the data (in the data's order)."""
        return list(self.columns) if self.columns else found[:most]


# A kind without a view of its own.
GENERIC_VIEW = DashboardView()
