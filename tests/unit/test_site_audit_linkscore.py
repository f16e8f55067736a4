"""The internal link score's PageRank on graphs whose ranks are known in closed form, and its
0-100 scale."""

from __future__ import annotations

import pytest

from seojobs.kinds.site_audit.linkscore import DAMPING, link_scores, ranks


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
