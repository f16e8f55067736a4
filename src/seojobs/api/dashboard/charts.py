"""Charts drawn by the server as inline SVG: pure functions from numbers to markup. Each chart
is an image with a name (``role="img"``, ``aria-label``, ``<title>``) and its values written
as text beside the bars, so it reads without colour and without script."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from markupsafe import Markup, escape

BAR_HEIGHT: Final = 22
GAP: Final = 8
LABEL_WIDTH: Final = 140
BAR_WIDTH: Final = 220
VALUE_WIDTH: Final = 80
COLOURS: Final = {"error": "#b3261e", "warning": "#7a4f00", "notice": "#0b57d0"}
DEFAULT_COLOUR: Final = "#0b57d0"


def number(value: float) -> str:
    """A number as charts and tables write it: grouped, at most two decimals, no trailing
    zeros (a rating of 4.6 reads "4.6", not "4.60")."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def _opening(title: str, summary: str, width: int, height: int) -> list[str]:
    """An SVG chart's start: an image named by its title and every value (``summary``)."""
    return [
        f'<svg class="chart" role="img" aria-label="{escape(title)}: {escape(summary)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]


def bar_chart(title: str, values: Sequence[tuple[str, float]]) -> Markup:
    """Horizontal bars, one per ``(label, value)``, scaled to the largest value."""
    width = LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH
    height = max(1, len(values)) * (BAR_HEIGHT + GAP) + GAP
    top = max((abs(v) for _, v in values), default=0) or 1
    summary = ", ".join(f"{label}: {number(v)}" for label, v in values)
    parts = _opening(title, summary, width, height)
    for n, (label, value) in enumerate(values):
        y = GAP + n * (BAR_HEIGHT + GAP)
        middle = y + BAR_HEIGHT * 0.7
        bar = round(BAR_WIDTH * abs(value) / top, 1)
        colour = COLOURS.get(label, DEFAULT_COLOUR)
        shown = label if len(label) <= 20 else label[:19] + "…"
        parts += [
            f'<text x="{LABEL_WIDTH - 6}" y="{middle}" text-anchor="end" font-size="13" '
            f'fill="#1b1f24">{escape(shown)}</text>',
            f'<rect x="{LABEL_WIDTH}" y="{y}" width="{bar}" height="{BAR_HEIGHT}" '
            f'fill="{colour}"/>',
            f'<text x="{LABEL_WIDTH + bar + 6}" y="{middle}" font-size="13" '
            f'fill="#1b1f24">{escape(number(value))}</text>',
        ]
    parts.append("</svg>")
    # Every text and attribute value above went through escape(); the rest is our markup.
    return Markup("".join(parts))  # noqa: S704  # noqa: S704 (every text in it went through escape)


LINE_WIDTH: Final = 440
LINE_HEIGHT: Final = 160
PAD: Final = 34


def line_chart(
    title: str, points: Sequence[tuple[str, float]], top: float, *, invert: bool = False
) -> Markup:
    """A line through ``points`` (``(label, value)``, oldest first) on a 0-``top`` scale, each
    point's value written above it and its label below (the first and last), so the trend
    reads without colour; the page gives the same values as a table. ``invert``: 0 at the top
    (a position, where less is better)."""
    inner_w, inner_h = LINE_WIDTH - 2 * PAD, LINE_HEIGHT - 2 * PAD
    top = top or 1
    step = inner_w / max(1, len(points) - 1)
    summary = ", ".join(f"{label}: {number(v)}" for label, v in points)
    parts = [
        *_opening(title, summary, LINE_WIDTH, LINE_HEIGHT),
        f'<line x1="{PAD}" y1="{PAD + inner_h}" x2="{PAD + inner_w}" y2="{PAD + inner_h}" '
        f'stroke="#6b7280"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD + inner_w}" y2="{PAD}" stroke="#d5d9de"/>',
        f'<text x="{PAD - 4}" y="{PAD + 4}" text-anchor="end" font-size="11" '
        f'fill="#4d5560">{escape(number(0 if invert else top))}</text>',
        f'<text x="{PAD - 4}" y="{PAD + inner_h + 4}" text-anchor="end" font-size="11" '
        f'fill="#4d5560">{escape(number(top if invert else 0))}</text>',
    ]
    placed = []
    for n, (label, value) in enumerate(points):
        x = round(PAD + (n * step if len(points) > 1 else inner_w / 2), 1)
        share = max(0.0, min(value, top)) / top
        y = round(PAD + (inner_h * share if invert else inner_h - inner_h * share), 1)
        placed.append((x, y, label, value))
    if len(placed) > 1:
        line = " ".join(f"{x},{y}" for x, y, _l, _v in placed)
        parts.append(
            f'<polyline points="{line}" fill="none" stroke="{DEFAULT_COLOUR}" stroke-width="2"/>'
        )
    for n, (x, y, label, value) in enumerate(placed):
        parts += [
            f'<circle cx="{x}" cy="{y}" r="4" fill="{DEFAULT_COLOUR}"/>',
            # Above the point, or below it when the point is at the top.
            f'<text x="{x}" y="{y - 8 if y - 8 > PAD + 2 else y + 17}" text-anchor="middle" '
            f'font-size="12" fill="#1b1f24">{escape(number(value))}</text>',
        ]
        if n in (0, len(placed) - 1):
            anchor = "start" if n == 0 and len(placed) > 1 else "end" if n else "middle"
            parts.append(
                f'<text x="{x}" y="{LINE_HEIGHT - 8}" text-anchor="{anchor}" font-size="12" '
                f'fill="#1b1f24">{escape(label)}</text>'
            )
    parts.append("</svg>")
    # Every text and attribute value above went through escape() or is a number we made.
    return Markup("".join(parts))  # noqa: S704
