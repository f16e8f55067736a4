"""Robots directives and canonical Link headers."""

from __future__ import annotations

import pytest

from seojobs.fetch import parse_meta_robots, parse_x_robots_tag
from seojobs.fetch.directives import link_header_canonicals


@pytest.mark.parametrize(
    ("metas", "noindex", "nofollow"),
    [
        ([("robots", "noindex, follow")], True, False),
        ([("robots", "NOINDEX,NOFOLLOW")], True, True),
        ([("googlebot", "none")], True, True),
        ([("robots", "all")], False, False),
        ([("robots", "index"), ("googlebot", "noindex")], True, False),  # most restrictive
        ([("robots", "max-snippet:20, nofollow")], False, True),
        ([("bingbot", "noindex")], False, False),  # another crawler's rule
        ([], False, False),
    ],
)
def test_meta_robots_for_googlebot(
    metas: list[tuple[str, str]], noindex: bool, nofollow: bool
) -> None:
    parsed = parse_meta_robots(metas)
    assert (parsed.noindex(), parsed.nofollow()) == (noindex, nofollow)


def test_meta_robots_for_another_agent() -> None:
    parsed = parse_meta_robots([("bingbot", "noindex")])
    assert parsed.noindex("bingbot")
    assert not parsed.noindex("googlebot")


def test_each_agent_is_answered_for_itself_however_often_it_is_asked() -> None:
    parsed = parse_meta_robots([("robots", "nofollow"), ("bingbot", "none")])
    for _ in range(2):  # the second time from what the first found
        assert (parsed.noindex(), parsed.nofollow()) == (False, True)
        assert (parsed.noindex("BingBot"), parsed.nofollow("bingbot")) == (True, True)
        assert parsed.names_for("other") == frozenset({"nofollow"})
    assert parsed == parse_meta_robots([("robots", "nofollow"), ("bingbot", "none")])


@pytest.mark.parametrize(
    ("values", "noindex", "nofollow"),
    [
        (["noindex"], True, False),
        (["noindex, nofollow"], True, True),
        (["googlebot: noindex"], True, False),
        (["GoogleBot: none"], True, True),
        (["otherbot: noindex, nofollow"], False, False),  # the prefix holds for the value
        (["otherbot: noindex", "nofollow"], False, True),  # ...but not into the next header
        (["googlebot: nofollow", "otherbot: noindex"], False, True),
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], False, False),  # not an agent
        (["max-snippet: 0, noimageindex"], False, False),
        ([], False, False),
    ],
)
def test_x_robots_tag(values: list[str], noindex: bool, nofollow: bool) -> None:
    parsed = parse_x_robots_tag(values)
    assert (parsed.noindex(), parsed.nofollow()) == (noindex, nofollow)


def test_x_robots_tag_keeps_the_raw_values_and_groups_by_agent() -> None:
    parsed = parse_x_robots_tag(["googlebot: noindex", "otherbot: nofollow, noarchive"])
    assert parsed.to_dict() == {
        "raw": ["googlebot: noindex", "otherbot: nofollow, noarchive"],
        "directives": {"googlebot": ["noindex"], "otherbot": ["nofollow", "noarchive"]},
        "noindex": True,
        "nofollow": False,
    }


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (['<https://a.test/p>; rel="canonical"'], ["https://a.test/p"]),
        (["<https://a.test/p>; rel=canonical"], ["https://a.test/p"]),
        (['</p>; rel="alternate", </c>; rel="canonical"'], ["/c"]),
        (['<https://a.test/p>; rel="next"'], []),
        (['<https://a.test/x>; hreflang="de"; rel="alternate canonical"'], ["https://a.test/x"]),
        (["<a>; rel=canonical", "<b>; REL=Canonical"], ["a", "b"]),
        (["garbage"], []),
    ],
)
def test_link_header_canonicals(values: list[str], expected: list[str]) -> None:
    assert link_header_canonicals(values) == expected
