"""The internal link score: PageRank over the crawled graph, once the crawl is complete.

Nodes are the crawled pages; an edge is a page's distinct internal link to another crawled
page (links to pages beyond the crawl, and to itself, are left out). Pages linking nowhere
(redirects, errors, dead ends) share their rank with every page, as PageRank's random
surfer does. The score is the rank on 0-100, the best-linked page 100, on a logarithmic
scale like Screaming Frog's Link Score (a linear one leaves nearly every page of a large
site at 0). Pure Python over integer lists: one pass per round, bounded rounds.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence

DAMPING = 0.85
ROUNDS = 150  # at most; a round shrinks the error by about DAMPING
MIN_ROUNDS = 30  # at least, on a graph too large for ROUNDS within EDGE_VISITS
EDGE_VISITS = 30_000_000  # the work allowed over every round (a few seconds of CPU)
TOLERANCE = 1e-10  # sum of rank changes under which the ranks count as settled


def ranks(edges: Sequence[Sequence[int]], damping: float = DAMPING) -> Sequence[float]:
    """PageRank of nodes ``0..len(edges)-1``, ``edges[i]`` the distinct nodes ``i`` links to."""
    n = len(edges)
    if n == 0:
        return array("d")
    # In arrays: a list holds a float object per page (100,000 pages: 3 MB a list).
    rank = array("d", [1.0 / n]) * n
    links = sum(map(len, edges))
    nowhere = [i for i, targets in enumerate(edges) if not targets]
    for _round in range(max(MIN_ROUNDS, min(ROUNDS, EDGE_VISITS // max(links, 1)))):
        dangling = sum(rank[i] for i in nowhere)
        base = (1.0 - damping) / n + damping * dangling / n
        new = array("d", [base]) * n
        for i, targets in enumerate(edges):
            if targets:
                share = damping * rank[i] / len(targets)
                for j in targets:
                    new[j] += share
        change = sum(abs(a - b) for a, b in zip(new, rank, strict=True))
        rank = new
        if change < TOLERANCE:
            break
    return rank


def link_scores(pages: Iterable[tuple[str, Iterable[str]]]) -> dict[str, int]:
    """URL -> its link score, 0-100, for ``pages`` as (url, the internal URLs it links to)."""
    listed = list(pages)
    index = {url: i for i, (url, _links) in enumerate(listed)}
    edges = [
        sorted({index[t] for t in links if t in index and index[t] != i})
        for i, (_url, links) in enumerate(listed)
    ]
    found = scores(ranks(edges))
    return {url: found[i] for url, i in index.items()}


def scores(found: Sequence[float]) -> list[int]:
    """Ranks on the 0-100 scale."""
    if not found:
        return []
    n, top = len(found), max(found)
    # log(1 + rank * n): the average page (rank 1/n) sits at log 2, the best at the top.
    scale = math.log1p(top * n)
    return [round(100 * math.log1p(r * n) / scale) if scale else 0 for r in found]
