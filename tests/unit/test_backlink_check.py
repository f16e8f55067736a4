"""One pair's check from a donor's fetch (pure): url and domain matching, which link counts,
page-level nofollow, the donor's status, redirects, robots.txt, and the history fields."""

from __future__ import annotations

from typing import Any

import pytest

from seojobs.fetch import FetchResult, RedirectHop, RobotsVerdict
from seojobs.fetch.result import make_headers
from seojobs.fetch.robots import RobotsState
from seojobs.kinds.backlink_refresh.check import DonorPage, pair_result, with_history
from seojobs.kinds.backlink_refresh.match import matches, on_site
from seojobs.kinds.backlink_refresh.params import subject

DONOR = "https://donor.test/post"
TARGET = "https://target.test/page/"
NOW = "2026-12-04T10:00:00Z"


def robots(state: RobotsState = "allowed") -> RobotsVerdict:
    return RobotsVerdict(DONOR, "https://donor.test/robots.txt", state, state, "seojobs")


def fetched(
    body: str,
    *,
    status: int = 200,
    content_type: str = "text/html",
    headers: list[tuple[str, str]] | None = None,
    final_url: str = DONOR,
    chain: tuple[RedirectHop, ...] = (),
) -> FetchResult:
    return FetchResult(
        DONOR,
        final_url,
        status,
        headers=make_headers([("content-type", content_type), *(headers or [])]),
        redirect_chain=chain,
        body=body.encode(),
    )


def check(result: FetchResult, mode: str = "url", verdict: Any = "default") -> dict[str, Any]:
    page = DonorPage.of(result, robots() if verdict == "default" else verdict)
    return pair_result(page, DONOR, TARGET, mode, NOW)


@pytest.mark.parametrize(
    ("link", "url", "domain"),
    [
        ("https://target.test/page/", True, True),
        ("http://target.test/page", True, True),  # scheme and trailing slash ignored
        ("https://www.target.test/page/?utm_source=x&gclid=1", True, True),  # www, tracking
        ("https://TARGET.test:443/page/#top", True, True),
        ("https://target.test/page/?id=2", False, True),  # another query: another page
        ("https://target.test/other", False, True),
        ("https://blog.target.test/", False, True),  # a subdomain: the domain, not the page
        ("https://target.test.evil/page/", False, False),
        ("https://nottarget.test/page/", False, False),
    ],
)
def test_url_and_domain_matching(link: str, url: bool, domain: bool) -> None:
    assert matches(link, TARGET, "url") is url
    assert matches(link, TARGET, "domain") is domain


def test_on_site_ignores_www_and_takes_subdomains() -> None:
    assert on_site("www.a.test", "a.test") and on_site("x.a.test", "www.a.test")
    assert not on_site("ba.test", "a.test")


def test_found_with_the_followed_link_counting_before_qualified_ones() -> None:
    body = (
        '<a href="https://target.test/page" rel="Sponsored NOFOLLOW">paid</a>'
        '<a href="/elsewhere">no</a>'
        '<a href="http://www.target.test/page/?utm_medium=x">Best <em>page</em></a>'
    )
    result = check(fetched(body))
    assert result["link_status"] == "found"
    assert result["link_count_to_target"] == 2
    assert (result["href_raw"], result["anchor_text"], result["rel"]) == (
        "http://www.target.test/page/?utm_medium=x",
        "Best page",
        [],
    )
    assert result["nofollow"] is False and result["is_image_link"] is False
    assert [link["rel"] for link in result["links"]] == [["sponsored", "nofollow"], []]
    assert result["status_code"] == 200 and result["indexable"] is True
    assert result["checked_at"] == NOW


def test_only_qualified_links_report_their_rel_and_an_image_link_its_alt() -> None:
    body = '<a href="https://target.test/page/" rel="ugc nofollow"><img alt="Logo" src=x></a>'
    result = check(fetched(body))
    assert (result["rel"], result["nofollow"]) == (["ugc", "nofollow"], True)
    assert (result["anchor_text"], result["is_image_link"]) == ("Logo", True)


@pytest.mark.parametrize(
    ("head", "headers"),
    [
        ('<meta name="robots" content="index, nofollow">', []),
        ('<meta name="googlebot" content="none">', []),
        ("", [("x-robots-tag", "nofollow")]),
    ],
)
def test_page_level_nofollow_overrides_the_links_rel(
    head: str, headers: list[tuple[str, str]]
) -> None:
    body = f'<html><head>{head}</head><body><a href="{TARGET}">t</a></body></html>'
    result = check(fetched(body, headers=headers))
    assert (result["link_status"], result["rel"]) == ("found", [])
    assert result["page_nofollow"] is True and result["nofollow"] is True


def test_a_relative_link_under_a_base_href_is_found() -> None:
    body = '<head><base href="https://target.test/"></head><body><a href="page/">x</a></body>'
    result = check(fetched(body))
    assert (result["link_status"], result["href"]) == ("found", "https://target.test/page/")


def test_domain_mode_finds_any_link_to_the_site() -> None:
    body = '<a href="https://www.target.test/another">x</a>'
    assert check(fetched(body))["link_status"] == "missing"
    assert check(fetched(body), "domain")["link_status"] == "found"


def test_a_canonical_elsewhere_and_noindex_show_on_the_donor() -> None:
    body = (
        '<head><link rel="canonical" href="https://donor.test/original">'
        '<meta name="robots" content="noindex"></head><a href="https://target.test/page/">t</a>'
    )
    result = check(fetched(body))
    assert result["link_status"] == "found"
    assert (result["canonical"], result["canonical_state"]) == (
        "https://donor.test/original",
        "other",
    )
    assert result["indexable"] is False


@pytest.mark.parametrize(
    ("result", "verdict", "status", "reason"),
    [
        (FetchResult(DONOR, DONOR, None), robots("disallowed"), "blocked", "robots.txt"),
        (FetchResult(DONOR, DONOR, None), robots("unreachable"), "donor_error", "unreachable"),
        (
            FetchResult(DONOR, DONOR, None, error_kind="dns_error", error="no such host"),
            None,
            "donor_error",
            "dns_error",
        ),
        (fetched("<p>gone</p>", status=404), robots(), "donor_error", "HTTP 404"),
        (fetched("<p>x</p>", status=503), robots(), "donor_error", "HTTP 503"),
        (fetched("%PDF", content_type="application/pdf"), robots(), "donor_error", "HTML"),
    ],
)
def test_donors_that_give_no_page(
    result: FetchResult, verdict: RobotsVerdict | None, status: str, reason: str
) -> None:
    checked = check(result, verdict=verdict)
    assert checked["link_status"] == status
    assert reason in checked["reason"]
    assert checked["link_count_to_target"] == 0


def test_a_redirect_to_another_page_is_donor_redirected_and_to_its_https_twin_is_not() -> None:
    body = f'<a href="{TARGET}">t</a>'
    moved = fetched(
        body,
        final_url="https://donor.test/new-home",
        chain=(RedirectHop(DONOR, 301, "/new-home"),),
    )
    result = check(moved)
    assert result["link_status"] == "donor_redirected"
    assert result["final_url"] == "https://donor.test/new-home"
    assert result["link_count_to_target"] == 1  # what the page it landed on holds
    assert result["redirect_chain"] == [{"url": DONOR, "status": 301, "location": "/new-home"}]
    twin = fetched(
        body, final_url="https://www.donor.test/post/", chain=(RedirectHop(DONOR, 301, "x"),)
    )
    assert check(twin)["link_status"] == "found"


def test_history_fields_across_checks() -> None:
    first = with_history({"link_status": "found", "checked_at": "t1"}, None)
    assert (first["first_seen"], first["last_checked"], first["last_changed"]) == ("t1",) * 3
    assert first["previous_status"] is None
    same = with_history({"link_status": "found", "checked_at": "t2"}, first)
    assert (same["first_seen"], same["last_checked"], same["last_changed"]) == ("t1", "t2", "t1")
    lost = with_history({"link_status": "missing", "checked_at": "t3"}, same)
    assert (lost["first_seen"], lost["last_changed"], lost["previous_status"]) == (
        "t1",
        "t3",
        "found",
    )
    still = with_history({"link_status": "missing", "checked_at": "t4"}, lost)
    assert (still["last_changed"], still["previous_status"]) == ("t3", "found")
    never = with_history({"link_status": "missing", "checked_at": "t1"}, None)
    assert never["first_seen"] is None and never["last_changed"] == "t1"


def test_a_pair_subject_is_normalised_and_bounded() -> None:
    assert subject("HTTPS://Donor.test:443/a#x", "https://t.test") == (
        "https://donor.test/a https://t.test/"
    )
    long = "https://donor.test/" + "a" * 600
    assert subject(long, TARGET).startswith("sha256:") and len(subject(long, TARGET)) == 71
