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


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}"


def bar_chart(title: str, values: Sequence[tuple[str, float]]) -> Markup:
    """Horizontal bars, one per ``(label, value)``, scaled to the largest value."""
    width = LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH
    height = max(1, len(values)) * (BAR_HEIGHT + GAP) + GAP
    top = max((abs(v) for _, v in values), default=0) or 1
    summary = ", ".join(f"{label}: {_number(v)}" for label, v in values)
    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}: {escape(summary)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
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
            f'fill="#1b1f24">{escape(_number(value))}</text>',
        ]
    parts.append("</svg>")
    # Every text and attribute value above went through escape(); the rest is our markup.
    return Markup("".join(parts))  # noqa: S704  # noqa: S704 (every text in it went through escape)
