"""A grid of search points around a centre, and what a keyword's grid comes to.

``size`` x ``size`` points (3, 5 or 7 a side) spread evenly over a square whose outer rows
and columns lie ``radius_km`` from the centre, north-south and east-west; the middle point is
the centre itself. Distances become degrees on a sphere of the Earth's mean radius: a km is
1/111.195 of a degree of latitude, and of longitude that over the cosine of the latitude
(the grid is a square on the ground, not on the map). Points are rounded to 6 decimals
(about 0.1 m), and kept within the valid ranges.

A keyword's grid: ``average_position`` over the points where the business was found (null
when it was found at none), ``top3_share`` the share of the points answered where it was in
the top 3, ``found_share`` the share where it was listed at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

KM_PER_DEGREE = 6371.0088 * math.pi / 180  # 111.195 km: the mean radius's degree


def points(
    latitude: float, longitude: float, size: int, radius_km: float
) -> list[tuple[float, float]]:
    """The grid's points, row by row from the north-west corner (the centre is the middle)."""
    half = (size - 1) // 2
    step = radius_km / half if half else 0.0
    scale = max(math.cos(math.radians(latitude)), 1e-6)
    found = []
    for row in range(-half, half + 1):
        lat = min(90.0, max(-90.0, latitude - row * step / KM_PER_DEGREE))
        for col in range(-half, half + 1):
            lon = longitude + col * step / (KM_PER_DEGREE * scale)
            lon = (lon + 180.0) % 360.0 - 180.0  # across the antimeridian
            found.append((round(lat, 6), round(lon, 6)))
    return found


def summary(positions: Sequence[int | None]) -> dict[str, Any]:
    """What the answered points' positions (None: not listed) come to."""
    answered = len(positions)
    found = [p for p in positions if p is not None]
    return {
        "points_answered": answered,
        "average_position": round(sum(found) / len(found), 2) if found else None,
        "top3_share": round(sum(1 for p in found if p <= 3) / answered, 4) if answered else 0.0,
        "found_share": round(len(found) / answered, 4) if answered else 0.0,
    }
