"""The internal link score: PageRank over the crawled graph, once the crawl is complete.

Nodes are the crawled pages; an edge is a page's distinct internal link to another crawled
page (links to pages beyond the crawl, and to itself, are left out). Pages linking nowhere
(redirects, errors, dead ends) share their rank with every page, as PageRank's random
surfer does. The score is the rank on 0-100, the best-linked page 100, on a logarithmic
scale like Screaming Frog's Link Score (a linear one leaves nearly every page of a large
site at 0). Pure Python over integer arrays, each round's sums in C loops; bounded rounds.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from itertools import islice
from operator import mul, sub

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
    sources, counts, weight = _pulled(edges, damping)
    links = len(sources)
    nowhere = [i for i, w in enumerate(weight) if not w]
    # In arrays: a list holds a float object per page (100,000 pages: 3 MB a list).
    rank = array("d", [1.0 / n]) * n
    for _round in range(max(MIN_ROUNDS, min(ROUNDS, EDGE_VISITS // max(links, 1)))):
        dangling = sum(map(rank.__getitem__, nowhere))
        base = (1.0 - damping) / n + damping * dangling / n
        # What each page hands each of its links, then every page's share pulled from its
        # in-links in order, in C loops (a Python loop over the links took 3x as long). A
        # list: its items are read once per link, and an array makes a float object each.
        share = list(map(mul, rank, weight))
        given = map(share.__getitem__, sources)
        new = array("d", [sum(islice(given, count), base) for count in counts])
        change = sum(map(abs, map(sub, new, rank)))
        rank = new
        if change < TOLERANCE:
            break
    return rank


def _pulled(
    edges: Sequence[Sequence[int]], damping: float
) -> tuple[array[int], array[int], array[float]]:
    """The links by target: ``sources`` holds the pages linking to node 0, then those linking
    to node 1, ... (``counts[j]`` of them for node ``j``), each in ascending order; and each
    page's ``weight``, ``damping`` over its out-links (0.0: it links nowhere)."""
    n = len(edges)
    counts = array("i", [0]) * n
    weight = array("d", [0.0]) * n
    for i, targets in enumerate(edges):
        if targets:
            weight[i] = damping / len(targets)
            for j in targets:
                counts[j] += 1
    start = array("q", [0]) * n
    at = 0
    for j, count in enumerate(counts):
        start[j] = at
        at += count
    sources = array("i", [0]) * at
    for i, targets in enumerate(edges):
        for j in targets:
            sources[start[j]] = i
            start[j] += 1
    return sources, counts, weight


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
