"""A kind's dashboard view: how the dashboard shows what the kind collected.

Plain data, declared on the kind (``Kind.view``). The project page renders every kind's latest
collections generically (a table per kind, charts of their numbers); a view names that
section and picks and orders its columns. Without a view, the section is titled after the kind
and shows the first columns its data has.

A kind may also declare a view of one completed job (``DashboardView.job``, a :class:`JobView`):
named sections the dashboard renders at ``/dashboard/jobs/{id}/view``, each naming the reads
the kind declares (``seojobs.reads``) that feed it. Data only: no markup in the kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class JobView:
    """How the dashboard shows one completed job of the kind, section by section (a section
    is shown when the view names what feeds it):

    - **score**: ``score``, a number of the job's collection (0-``score_max``), shown large
      under ``score_label``, with its trend over the project's jobs of the kind (``history``:
      the operation id of the kind's ``Read`` of every collection, newest first);
    - **issues**: the job's findings grouped by severity, each code with its count and its
      one-line ``explanations`` entry; a code opens the rows the ``issues`` read (the
      operation id of a ``JobRead`` of findings, filtered by ``code``) gives, paged;
    - **pages**: the rows of the ``pages`` read (a ``JobRead`` keyed by ``seq``, each row
      with a ``url`` and its ``issues`` codes), each opening that row's findings;
    - **changes**: (``compare``) new and fixed findings against the previous job of the kind
      in the project."""

    title: str
    score: str | None = None
    score_label: str = ""
    score_max: int = 100
    history: str | None = None
    issues: str | None = None
    explanations: Mapping[str, str] = field(default_factory=dict)
    pages: str | None = None
    compare: bool = False


@dataclass(frozen=True)
class DashboardView:
    """``title``: the heading of the kind's section ("Rankings"); ``columns``: the values of a
    collection shown, in order, each a top-level key of its data or ``key.sub`` one level down
    (``"scores.performance"``); empty: the first ones found."""

    title: str = ""
    columns: tuple[str, ...] = ()
    # A view of one completed job (its page links to it); None: the job page only.
    job: JobView | None = None

    def heading(self, kind: str) -> str:
        return self.title or f"{kind}: latest results"

    def pick(self, found: list[str], most: int) -> list[str]:
        """The columns shown, of those ``found`` in the data (in the data's order)."""
        return list(self.columns) if self.columns else found[:most]


# A kind without a view of its own.
GENERIC_VIEW = DashboardView()
