"""The internal link score's PageRank on graphs whose ranks are known in closed form, and its
0-100 scale."""

from __future__ import annotations

import pytest

from seojobs.kinds.site_audit.linkscore import DAMPING, _pulled, link_scores, ranks


def test_a_cycle_ranks_every_page_alike() -> None:
    assert ranks([[1], [2], [0]]) == pytest.approx([1 / 3] * 3)


def test_a_star_matches_its_closed_form() -> None:
    # The hub links to k leaves, each leaf back to the hub only:
    # hub = (1-d)/n + d*k*leaf, leaf = (1-d)/n + d*hub/k, n = k + 1.
    k, d = 4, DAMPING
    n = k + 1
    leaf = (1 - d) / n * (1 + d / k) / (1 - d * d)
    hub = (1 - d) / n + d * k * leaf
    found = ranks([[1, 2, 3, 4], [0], [0], [0], [0]])
    assert found == pytest.approx([hub, leaf, leaf, leaf, leaf], rel=1e-6)
    assert sum(found) == pytest.approx(1.0)


def test_pages_linking_nowhere_share_their_rank_with_all() -> None:
    found = ranks([[1], []])
    assert sum(found) == pytest.approx(1.0)
    assert found[1] > found[0]


def test_scores_order_pages_by_their_links_and_ignore_the_rest() -> None:
    scores = link_scores(
        [
            ("/", ["/a", "/b", "/c", "/", "https://elsewhere.test/"]),  # itself, beyond: out
            ("/a", ["/b"]),
            ("/b", ["/"]),
            ("/c", ["/b", "/d"]),
            ("/d", []),
        ]
    )
    assert scores["/"] == 100 or scores["/b"] == 100
    assert min(scores["/"], scores["/b"]) > scores["/a"] == scores["/c"] > scores["/d"] > 0
    assert set(scores) == {"/", "/a", "/b", "/c", "/d"}
    assert link_scores([]) == {}


def test_links_are_pulled_by_target_in_order() -> None:
    sources, counts, weight = _pulled([[1, 2], [2], [], [0, 1, 2]], DAMPING)
    assert list(counts) == [1, 2, 3, 0]
    assert list(sources) == [3, 0, 3, 0, 1, 3]  # node 0's, then 1's, then 2's
    assert list(weight) == pytest.approx([DAMPING / 2, DAMPING, 0.0, DAMPING / 3])


def test_ranks_are_the_rounds_of_pagerank_on_a_larger_graph() -> None:
    # Each page links to the next three and to page 0; every 7th links nowhere.
    n = 50
    edges = [
        [] if i % 7 == 6 else sorted({(i + k) % n for k in (1, 2, 3)} | {0} - {i}) for i in range(n)
    ]
    rank = [1.0 / n] * n
    for _round in range(200):  # PageRank as written in the textbook, rounds to convergence
        dangling = sum(rank[i] for i in range(n) if not edges[i])
        new = [(1 - DAMPING) / n + DAMPING * dangling / n] * n
        for i, targets in enumerate(edges):
            for j in targets:
                new[j] += DAMPING * rank[i] / len(targets)
        rank = new
    assert list(ranks(edges)) == pytest.approx(rank, rel=1e-8)
