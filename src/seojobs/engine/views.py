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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from seojobs.records import CollectionRecord

# How the dashboard writes a cell of a view's table (every one as text, never colour alone):
# ``position`` a rank or "not ranked"; ``change`` a move (a number: places up when positive,
# with an arrow and the words; a text as it is: "new", "lost"); ``share`` 0-1 as a percentage;
# ``yesno``; ``rating`` (good / needs_improvement / poor); ``days`` a countdown ("in 41 days");
# ``url`` a link when http(s); ``list`` its entries; ``number``, ``money``, ``text``.
Show = Literal[
    "text",
    "number",
    "money",
    "url",
    "list",
    "position",
    "change",
    "share",
    "yesno",
    "rating",
    "days",
]


@dataclass(frozen=True)
class Column:
    """A column of a view's table: the rows' ``key``, its heading, how it is written; a
    ``sortable`` table sorts by any of its columns."""

    key: str
    label: str
    show: Show = "text"


@dataclass(frozen=True)
class Collected:
    """One collection the job wrote and the one of the same subject before it (None: the
    first), as a view's table is made of them."""

    this: CollectionRecord
    previous: CollectionRecord | None
    # The lowest value of each number the view names (``JobView.lowest``) over the subject's
    # collections up to this one: a keyword's best position.
    lowest: Mapping[str, float] = field(default_factory=dict)

    @property
    def data(self) -> dict[str, Any]:
        return self.this.data if isinstance(self.this.data, dict) else {}

    @property
    def before(self) -> dict[str, Any] | None:
        """The previous collection's data (None: this is the first)."""
        if self.previous is None:
            return None
        return self.previous.data if isinstance(self.previous.data, dict) else {}


@dataclass(frozen=True)
class Table:
    """A table of a job's view: ``rows`` (the kind's function) makes its rows from every
    collection the job wrote, each with the previous one of its subject; ``counts``: a
    column whose values are counted above the table ("found: 3 · missing: 1"); ``sortable``:
    its headings sort it (server-side); every table is also served as CSV."""

    title: str
    columns: tuple[Column, ...]
    rows: Callable[[Sequence[Collected]], list[dict[str, Any]]]
    about: str = ""
    counts: str | None = None
    sortable: bool = False
    empty: str = "Nothing to show."


@dataclass(frozen=True)
class Chart:
    """A chart of one number of a subject's collections over time (a keyword's position, a
    page's performance score), drawn for each subject the job collected (the first few, or
    the one asked for) with the same values as a table. ``value`` reads it from a
    collection's data (None: not shown, e.g. not ranked); ``lower_is_better`` draws the axis
    upside down (a position); ``top``: the scale's top (None: the largest value)."""

    title: str
    value: Callable[[Any], float | None]
    label: str
    lower_is_better: bool = False
    top: float | None = None
    subject_label: Callable[[Any], str] | None = None


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
      in the project;
    - **tables**: the collections the job wrote, as the kind's :class:`Table` s make rows of
      them (each beside the previous collection of its subject);
    - **chart**: a number of each subject's collections over time (:class:`Chart`);
    - **rerun**: a "run again" form (a POST that creates a job with the same params; the view
      itself never starts one)."""

    title: str
    score: str | None = None
    score_label: str = ""
    score_max: int = 100
    history: str | None = None
    issues: str | None = None
    explanations: Mapping[str, str] = field(default_factory=dict)
    # Where the job's collection counts its findings ({code: n}), with each code's severity:
    # the issue list reads them there instead of counting every finding again.
    counts: str | None = None
    severities: Mapping[str, str] = field(default_factory=dict)
    pages: str | None = None
    compare: bool = False
    # The job's collections as tables and a chart of their history (kinds other than audits).
    tables: tuple[Table, ...] = ()
    chart: Chart | None = None
    lowest: tuple[str, ...] = ()  # numbers of the data whose lowest value rows get
    # Whether the view offers "run again" (a form that creates a job with the same params).
    rerun: bool = False


@dataclass(frozen=True)
class DashboardView:
    """``title``: the heading of the kind's section ("Rankings"); ``columns``: the values of a
    collection shown, in order, each a top-level key of its data or ``key.sub`` one level down
    (``"scores.performance"``); empty: the first ones found."""

    title: str = ""
    columns: tuple[str, ...] = ()
    # A view of one completed job (its page links to it); None: the job page only.
    job: JobView | None = None
    # The project page's chart of the kind's latest collections (one per subject): its
    # title and its bars (label, value), e.g. keywords per position range; None: no chart.
    summary: Callable[[Sequence[CollectionRecord]], tuple[str, list[tuple[str, float]]]] | None = (
        None
    )

    def heading(self, kind: str) -> str:
        return self.title or f"{kind}: latest results"

    def pick(self, found: list[str], most: int) -> list[str]:
        """The columns shown, of those ``found`` in the data (in the data's order)."""
        return list(self.columns) if self.columns else found[:most]


def tally(values: Iterable[str], most: int | None = None) -> list[tuple[str, float]]:
    """How often each value occurs, most first (then A to Z), as a summary chart's bars."""
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(k, float(n)) for k, n in ordered[:most]]


# A kind without a view of its own.
GENERIC_VIEW = DashboardView()
