"""The dashboard's view of each kind's job (issue 28), over data collected by real jobs against
the test fakes (``views_world``: rank checks, backlinks and GEO twice, one domain lookup, one
tech-stack lookup, one keyword research, one real Lighthouse run): what each view shows, as
text an SEO user reads (moves as arrows and words, ratings by name, countdowns), the charts
with their tables, the CSV, the project page's chart per kind, "run again", and that another
user gets 404 at every address. One app and one world for the module; reading never starts
a job.

The same views in a real Chromium too (the module's first test, over the world as built):
from the project page to a rank check's view (moves in words, the chart and its table),
sorting the keyword research, the backlinks' lost and new links, the domain's countdowns, the
GEO view, and the tech stack's, web vitals' and local rankings' views, each checked at 390 px
wide (no horizontal scrolling; full-page screenshots of each with SEOJOBS_TEST_SCREENSHOTS=all,
of the GEO view and the rank check's positions always); Lighthouse on every kind's view
(accessibility and best practices at least 0.95). It was tests/browser/test_kind_views.py,
which built the same world again: one more Lighthouse run and every other job, ~10 CPU-s."""

from __future__ import annotations

import contextlib
import csv
import html
import io
import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import expect

from tests.api_helpers import Api
from tests.browser.conftest import DESKTOP, OUTPUT, PHONE, Site, one_page, screenshots
from tests.browser.conftest import sign_in as sign_in_page
from tests.browser.test_lighthouse import (
    FLOOR,
    LIGHTHOUSE,
    failing,
    session_cookie,
    start_audit,
)
from tests.builtin import REGISTRY
from tests.conftest import database_of
from tests.dashboard_helpers import csrf_of, sign_in
from tests.integration.views_world import HOSE, REEL, World, views_world
from tests.waiting import wait_until

pytestmark = pytest.mark.stores("sqlite")


@pytest.fixture(scope="module")
def world(
    module_store: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    with (
        database_of(module_store, request) as url,
        views_world(url, tmp_path_factory.mktemp("views")) as made,
    ):
        yield made


@pytest.fixture
def mine(world: World) -> Iterator[Api]:
    """The shared app for one test: its own client address, its clients closed after it."""
    made = world.app.own()
    yield made
    made.close()


@pytest.fixture
def owner(world: World, mine: Api) -> httpx.Client:
    return sign_in(mine, world.owner.key)


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _section(page: str, heading: str) -> str:
    """The section under the h2 ``heading``, up to the next section."""
    found = re.search(rf"<h2 id=\"[^\"]+\">{re.escape(html.escape(heading))}</h2>", page)
    assert found, f"no section {heading!r}"
    return page[found.end() : page.find("</section>", found.end())]


def _rows(section: str) -> list[list[str]]:
    """Each body row's cells as text."""
    body = section[section.find("<tbody>") : section.find("</tbody>")]
    return [
        [_text(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]


def _table(section: str) -> list[dict[str, str]]:
    head = section[section.find("<thead>") : section.find("</thead>")]
    names = [
        re.sub(r" \((?:a|de)scending\)$", "", _text(h))
        for h in re.findall(r"<th scope=\"col\">(.*?)</th>", head, re.S)
    ]
    return [dict(zip(names, row, strict=True)) for row in _rows(section)]


def _view(client: httpx.Client, job_id: int, **query: str) -> str:
    shown = client.get(f"/dashboard/jobs/{job_id}/view", params=query)
    assert shown.status_code == 200, shown.text
    return shown.text


def _jobs(world: World) -> int:
    return len(world.app.services.jobs.page(world.owner.user, limit=1000))


# Every kind with a view in the world (web vitals' needs its own Lighthouse run: vitals=True).
VIEWED = (
    "rank_check",
    "keyword_research",
    "backlink_refresh",
    "backlink_analysis",
    "domain_lookup",
    "geo_lookup",
    "tech_stack",
    "web_vitals",
    "local_rank_check",
)
CATEGORIES = ("accessibility", "best-practices")


def test_every_kind_with_a_view_is_viewed() -> None:
    """A new kind's job view joins the Lighthouse walk below (the site audit's views have
    their own, in tests/browser/test_audit_view.py)."""
    viewed = {kind.name for kind in REGISTRY.kinds() if kind.view.job is not None}
    assert viewed - {"site_audit"} == set(VIEWED), "add the new kind's view to VIEWED"


# First of the module's tests that use the world: it sees the world as built (a later test
# runs a job again). Its Playwright and Chromium are its own, stopped when it ends.
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_kinds_views_walked_at_desktop_and_phone_width(world: World) -> None:
    with contextlib.ExitStack() as stack:
        page = stack.enter_context(one_page())
        site = Site(world.app.base, world.app.services)
        sign_in_page(page, site, world.owner.key)
        if not LIGHTHOUSE.exists():
            pytest.fail(f"no Lighthouse at {LIGHTHOUSE}: (cd lighthouse && npm ci)")
        cookie = session_cookie(site, world.owner.key)
        folder = OUTPUT.parent / "lighthouse"
        # Every kind's view (issue 28: each >= 0.95); the rank check's has a chart and moves,
        # the keyword research's the sort form. Lighthouse audits them in its own Chromium
        # while this one walks them (the walk changes nothing they show).
        views = {f"view-{kind}": f"/dashboard/jobs/{world.last(kind)}/view" for kind in VIEWED}
        lighthouse = stack.enter_context(start_audit(site, views, cookie, folder, CATEGORIES))
        page.goto(site.url(f"/dashboard/projects/{world.project}"))
        expect(page.get_by_role("img", name=re.compile("^Keywords by position"))).to_be_visible()
        rank = world.last("rank_check")
        page.get_by_role("link", name=f"#{rank} rank_check").click()
        page.get_by_role("link", name="Open the results").click()
        positions = page.get_by_role("region", name="Positions")
        expect(positions.get_by_role("cell", name="▲ up 1")).to_be_visible()
        expect(positions.get_by_role("cell", name="dropped out")).to_be_visible()
        chart = page.get_by_role("img", name=re.compile("^Position of “garden hose”"))
        expect(chart).to_be_visible()
        screenshots(page, "view-rank-check", pictured=False)
        positions.screenshot(path=str(OUTPUT / "view-rank-check-positions.png"))  # for the docs
        positions.get_by_role("link", name="Keyword", exact=True).click()
        expect(page.get_by_role("link", name="Keyword (ascending)")).to_be_visible()

        page.goto(site.url(f"/dashboard/jobs/{world.last('keyword_research')}/view"))
        page.get_by_role("link", name="CPC", exact=True).click()
        page.get_by_role("link", name="CPC (ascending)").click()
        expect(page.get_by_role("link", name="CPC (descending)")).to_be_visible()
        expect(page.get_by_role("link", name="Download as CSV")).to_be_visible()
        # At 390 px the headings are hidden (a card per row): the sort form does it there.
        page.set_viewport_size(PHONE)
        page.get_by_label("Sort by").select_option(label="Monthly searches")
        page.get_by_label("Order").select_option("asc")
        page.get_by_role("button", name="Sort").click()
        first = page.get_by_role("region", name="Keywords").get_by_role("rowheader").first
        expect(first).to_have_text("hose reel")  # the fewer searches first
        page.set_viewport_size(DESKTOP)
        screenshots(page, "view-keywords", pictured=False)

        page.goto(site.url(f"/dashboard/jobs/{world.last('backlink_refresh')}/view"))
        changes = page.get_by_role("region", name="Lost and new since the previous refresh")
        expect(changes.get_by_role("rowheader", name="lost")).to_be_visible()
        expect(changes.get_by_role("rowheader", name="new")).to_be_visible()
        screenshots(page, "view-backlinks", pictured=False)

        page.goto(site.url(f"/dashboard/jobs/{world.last('backlink_analysis')}/view"))
        index_changes = page.get_by_role("region", name="New and lost since the previous analysis")
        expect(index_changes.get_by_role("rowheader", name="lost")).to_be_visible()
        expect(index_changes.get_by_role("rowheader", name="new")).to_be_visible()
        screenshots(page, "view-backlink-analysis", pictured=False)

        page.goto(site.url(f"/dashboard/jobs/{world.last('domain_lookup')}/view"))
        expect(page.get_by_role("cell", name=re.compile(r"^in (89|90) days$"))).to_be_visible()
        screenshots(page, "view-domain", pictured=False)

        for kind, heading in (
            ("tech_stack", "Technologies by category"),
            ("web_vitals", "Metrics against their thresholds"),
            ("local_rank_check", "Local positions"),
        ):
            page.goto(site.url(f"/dashboard/jobs/{world.last(kind)}/view"))
            expect(page.get_by_role("heading", name=heading)).to_be_visible()
            screenshots(page, f"view-{kind.replace('_', '-')}", pictured=False)

        page.goto(site.url(f"/dashboard/jobs/{world.last('geo_lookup')}/view"))
        expect(page.get_by_role("cell", name="▲ up 100")).to_be_visible()
        # The docs picture none of these views (but the rank check's positions, above): the last
        # one is saved on every run all the same, as a check that the walk's pictures are.
        screenshots(page, "view-geo")
        assert (OUTPUT / "view-geo-phone.png").exists()

        results = lighthouse.scores()
        for kind in VIEWED:
            scores, out = results[f"view-{kind}"], folder / f"view-{kind}.json"
            for category in CATEGORIES:
                assert scores[category] >= FLOOR, (kind, category, failing(out, category))


def test_a_rank_checks_view_shows_positions_moves_best_url_features_and_history(
    world: World, owner: httpx.Client
) -> None:
    first, second = world.jobs["rank_check"]
    page = _view(owner, second)
    rows = {r["Keyword"]: r for r in _table(_section(page, "Positions"))}
    hose, reel, shears = rows["garden hose"], rows["hose reel"], rows["pruning shears"]
    # garden hose: 2 -> 1 (up one); hose reel: 1 -> out; pruning shears: never ranked.
    assert (hose["Position"], hose["Previous"], hose["Best"]) == ("1", "2", "1")
    assert hose["Change since the previous check"] == "▲ up 1"
    assert hose["Ranking URL"] == "https://acme.example/hoses/"
    assert hose["SERP features"] == "featured_snippet, people_also_ask"
    assert 'href="https://acme.example/hoses/" rel="noopener noreferrer nofollow"' in page
    assert (reel["Position"], reel["Change since the previous check"]) == (
        "not ranked",
        "dropped out",
    )
    assert reel["Best"] == "1"  # its best, in the first check
    assert (shears["Position"], shears["Best"]) == ("not ranked", "not ranked")
    assert list(rows) == ["garden hose", "hose reel", "pruning shears"]  # best first
    # The first check: every keyword is new.
    earlier = _table(_section(_view(owner, first), "Positions"))
    assert {r["Change since the previous check"] for r in earlier} == {"new"}
    # A keyword's positions as a chart (upside down: 1 on top) and the same as a table.
    chart = _section(page, "Position of “garden hose” (desktop, 2840)")
    assert "<svg" in chart and "<title>Position of “garden hose” (desktop, 2840)</title>" in chart
    assert [r[0] for r in _rows(chart)] == [f"#{second}", f"#{first}"]
    assert [r[2] for r in _rows(chart)] == ["1", "2"]
    # One subject's chart, asked for; sorted by a column.
    only = _view(owner, second, subject="desktop/2840/en/hose reel")
    assert "Position of “hose reel”" in only and "Position of “garden hose”" not in only
    by_keyword = _table(_section(_view(owner, second, sort="keyword", order="desc"), "Positions"))
    assert [r["Keyword"].split(" (")[0] for r in by_keyword] == [
        "pruning shears",
        "hose reel",
        "garden hose",
    ]
    bad = owner.get(f"/dashboard/jobs/{second}/view", params={"sort": "nope"})
    assert bad.status_code == 422 and "sort: must be one of" in bad.text
    domain = world.last("domain_lookup")  # no table of it sorts
    none = owner.get(f"/dashboard/jobs/{domain}/view", params={"sort": "what"})
    assert none.status_code == 422 and "sort: nothing here sorts" in none.text
    unknown = owner.get(f"/dashboard/jobs/{second}/view", params={"subject": "desktop/1/en/x"})
    assert unknown.status_code == 404


def test_a_backlink_refreshs_view_counts_statuses_and_lists_lost_and_new_links(
    world: World, owner: httpx.Client
) -> None:
    page = _view(owner, world.last("backlink_refresh"))
    changes = _section(page, "Lost and new since the previous refresh")
    assert "<strong>lost</strong>: 1" in changes and "<strong>new</strong>: 1" in changes
    found = {(r["Change"], r["Donor page"].rsplit("/", 1)[1]): r for r in _table(changes)}
    assert set(found) == {("lost", "post"), ("new", "gone")}
    assert found["lost", "post"]["Previous status"] == "found"
    assert found["lost", "post"]["Status"] == "missing"
    assert found["lost", "post"]["Why"]  # the reason the check gave
    assert found["new", "gone"]["Status"] == "found" and found["new", "gone"]["Why"]
    pairs = _section(page, "Every pair checked")
    assert "<strong>found</strong>: 1" in pairs and "<strong>missing</strong>: 1" in pairs
    assert "<strong>donor_redirected</strong>: 1" in pairs  # /moved
    assert len(_table(pairs)) == 3
    # The first refresh has nothing to compare with.
    first = _view(owner, world.jobs["backlink_refresh"][0])
    assert "No link lost or new since the previous refresh" in first


def test_a_backlink_analysiss_view_shows_totals_new_and_lost_domains_anchors_and_links(
    world: World, owner: httpx.Client
) -> None:
    first, second = world.jobs["backlink_analysis"]
    page = _view(owner, second)
    totals = {r["Measure"]: r for r in _table(_section(page, "Totals in the index"))}
    backlinks = totals["Backlinks"]  # 4 live links, then 4 again (one lost, one new)
    assert (backlinks["Now"], backlinks["Previous analysis"], backlinks["Change"]) == (
        "4",
        "4",
        "0",
    )
    assert totals["New links since the previous analysis"]["Now"] == "1"
    assert totals["Links lost since the previous analysis"]["Now"] == "1"
    changes = _section(page, "New and lost since the previous analysis")
    assert "<strong>lost</strong>: 1" in changes and "<strong>new</strong>: 1" in changes
    found = {r["Change"]: r for r in _table(changes)}
    assert found["lost"]["Linking page"] == "https://old.example/a"
    assert found["lost"]["Why"] == "no longer listed"
    assert found["new"]["Linking page"] == "https://review.example/best"
    domains = _table(_section(page, "Referring domains"))
    assert {r["Domain"] for r in domains} >= {"blog.garden.example", "review.example"}
    anchors = {r["Anchor text"]: r for r in _table(_section(page, "Anchors"))}
    assert anchors["Acme hoses"]["Backlinks"] == "1"
    links = _section(page, "Links")
    assert "<strong>live</strong>: 4" in links
    rows = _table(links)
    assert rows[0]["Linking page"] == "https://blog.garden.example/hoses"  # strongest first
    assert {r["Dofollow"] for r in rows} == {"yes", "no"}
    # The first analysis has nothing to compare with.
    assert "No link new or lost since the previous analysis" in _view(owner, first)


def test_a_geo_lookups_view_shows_citations_mentions_shares_and_their_trend(
    world: World, owner: httpx.Client
) -> None:
    page = _view(owner, world.last("geo_lookup"))
    rows = {
        (r["Prompt"], r["Provider"]): r
        for r in _table(_section(page, "Visibility per prompt and provider"))
    }
    hose, reel = rows[HOSE, "openai"], rows[REEL, "openai"]
    assert (hose["Domain cited"], hose["Cited at (best)"], hose["Brand mentioned"]) == (
        "yes",
        "2",
        "yes",
    )
    assert (hose["Cited share"], hose["Mentioned share"]) == ("100 %", "100 %")
    assert hose["Cited share since the previous lookup (points)"] == "= no change"
    # The reel's answer now cites the shop and names the brand: up 100 points.
    assert (reel["Domain cited"], reel["Brand mentioned"]) == ("yes", "yes")
    assert reel["Cited share since the previous lookup (points)"] == "▲ up 100"
    chart = _section(page, f"Cited share (%) of “{REEL}” on openai")
    assert [r[2] for r in _rows(chart)] == ["100", "0"]


def test_a_web_vitals_view_rates_each_metric_against_the_thresholds(
    world: World, owner: httpx.Client
) -> None:
    page = _view(owner, world.last("web_vitals"))
    metrics = {r["Metric"]: r for r in _table(_section(page, "Metrics against their thresholds"))}
    lcp = metrics["Largest Contentful Paint"]
    assert lcp["Form factor"] == "mobile"
    assert lcp["Thresholds (web.dev)"] == "good ≤ 2.50 s, poor > 4.00 s"
    assert lcp["Lab rating"] in ("good", "needs improvement", "poor")
    assert re.fullmatch(r"\d+ ms|\d+\.\d\d s", lcp["Lab (Lighthouse)"])
    assert lcp["Field p75 (CrUX)"] != "—" and lcp["Field rating"] != "—"  # the CrUX fake's
    assert (
        metrics["Cumulative Layout Shift"]["Thresholds (web.dev)"] == "good ≤ 0.100, poor > 0.250"
    )
    assert "Opportunities" in page
    score = _table(_section(page, "Performance score"))[0]["Score (0-100)"]
    assert 0 <= int(score) <= 100
    assert "Performance score of " in page and "Fewer than two values to draw" in page


def test_a_local_rank_checks_view_shows_positions_their_moves_and_who_is_above(
    world: World, owner: httpx.Client
) -> None:
    first, second = world.jobs["local_rank_check"]
    page = _view(owner, second)
    [row] = _table(_section(page, "Local positions"))
    # Acme's shop: 2 -> 1 (up one); nothing listed above it any more.
    assert (row["Keyword"], row["Position"], row["Best"]) == ("hose repair austin", "1", "1")
    assert row["Change since the previous check"] == "▲ up 1"
    assert (row["Rating"], row["Reviews"]) == ("4.6", "120")
    [before] = _table(_section(_view(owner, first), "Local positions"))
    assert (before["Position"], before["Change since the previous check"]) == ("2", "new")
    assert "Zeta Garden" in before["Listed above"]


def test_a_domain_lookups_view_shows_registration_expiry_countdowns_and_dns(
    world: World, owner: httpx.Client
) -> None:
    page = _view(owner, world.last("domain_lookup"))
    facts = {
        r["What"]: r for r in _table(_section(page, "Registration, certificate and mail policy"))
    }
    assert facts["Registrar"]["Value"] == "RESERVED-Internet Assigned Numbers Authority"
    assert re.fullmatch(r"in (89|90) days", facts["Certificate expires"]["Expires"])
    assert re.fullmatch(
        r"in [\d,]+ days?|[\d,]+ days ago", facts["Registration expires"]["Expires"]
    )
    assert facts["Name servers"]["Value"] == "a.iana-servers.net, b.iana-servers.net"
    assert facts["SPF"]["Value"].startswith("v=spf1 include:_spf.mail.test")
    assert "DMARC" in facts
    records = _table(_section(page, "DNS records"))
    assert {"Type": "A", "Value": "127.0.0.1", "Domain": "example.test"} in records
    assert {r["Type"] for r in records} >= {"A", "AAAA", "MX", "NS", "TXT", "CAA", "SOA"}


def test_a_tech_stack_view_groups_technologies_by_category_with_evidence(
    world: World, owner: httpx.Client
) -> None:
    page = _view(owner, world.last("tech_stack"))
    section = _section(page, "Technologies by category")
    rows = {r["Technology"]: r for r in _table(section)}
    widget = rows["HtmlWidget"]
    assert (widget["Category"], widget["Version"]) == ("Widgets", "2.x")
    assert "field: html" in widget["Evidence"] and "data-htmlwidget" in widget["Evidence"]
    assert rows["CookieShop"]["Category"] == "Ecommerce"
    assert "cshop_session" in rows["CookieShop"]["Evidence"]
    categories = [r["Category"] for r in _table(section)]
    assert categories == sorted(categories, key=str.lower)
    assert "<strong>Widgets</strong>:" in section


def test_a_keyword_researchs_view_sorts_its_table_and_serves_it_as_csv(
    world: World, owner: httpx.Client
) -> None:
    job_id = world.last("keyword_research")
    page = _view(owner, job_id)
    rows = _table(_section(page, "Keywords"))
    volumes = [int(r["Monthly searches"].replace(",", "")) for r in rows]
    assert volumes == sorted(volumes, reverse=True) and len(rows) >= 2
    assert rows[0]["Keyword"] == "garden hose" and rows[0]["CPC"] == "0.85"
    by_cpc = _table(_section(_view(owner, job_id, sort="cpc", order="asc"), "Keywords"))
    cpcs = [float(r["CPC"]) for r in by_cpc]
    assert cpcs == sorted(cpcs)
    turned = f'href="/dashboard/jobs/{job_id}/view?sort=cpc&amp;order=desc'
    assert turned in _view(owner, job_id, sort="cpc")  # its heading turns the order round
    link = f"/dashboard/jobs/{job_id}/view/tables/1.csv"
    assert f'href="{link}"' in page
    got = owner.get(link)
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(got.text)))
    assert lines[0]["keyword"] == "garden hose" and lines[0]["search_volume"] == "12100"
    assert len(lines) == len(rows)


def test_every_kinds_job_page_links_to_its_view_and_the_project_page_charts_each_kind(
    world: World, owner: httpx.Client
) -> None:
    for kind, jobs in world.jobs.items():
        shown = owner.get(f"/dashboard/jobs/{jobs[-1]}")
        assert shown.status_code == 200
        assert f'href="/dashboard/jobs/{jobs[-1]}/view"' in shown.text, kind
        assert '{"' not in _text(shown.text), kind  # inputs as text, never JSON
    project = owner.get(f"/dashboard/projects/{world.project}").text
    for title in (
        "Keywords by position: 1-3: 1, 4-10: 0, 11-20: 0, 21-100: 0, not ranked: 2",
        "Backlinks by status: donor_redirected: 1, found: 1, missing: 1",
        "Backlinks in the index by target: acme.example: 4",
        "Prompts per provider citing the domain and naming the brand: domain cited: 2",
        "Technologies per category:",
        "Monthly searches of the top keywords: garden hose: 12,100",
        "Days until expiry: example.test registration:",
        "Performance score (0-100) per page:",
    ):
        assert f'aria-label="{title}' in project, title
    # Each kind's table shows the columns its view picks, the values as collected.
    rankings = project[project.index(">Rankings</h2>") :]
    rankings = rankings[: rankings.index("</section>")]
    header = re.findall(r'<th scope="col">([^<]*)</th>', rankings)
    assert header == ["Subject", "Collected", "keyword", "device", "position", "url", "Job"]
    assert 'data-label="url">https://acme.example/hoses/<' in rankings
    # No chart of every number of the data (the max_pages beside pages_crawled).
    assert 'aria-label="rank_check ' not in project and 'aria-label="geo_lookup ' not in project


def test_views_are_reads_and_run_again_is_a_form_that_creates_the_same_job(
    world: World, owner: httpx.Client
) -> None:
    before = _jobs(world)
    job_id = world.last("domain_lookup")
    page = _view(owner, job_id)
    for jobs in world.jobs.values():
        _view(owner, jobs[-1])
    assert _jobs(world) == before  # opening views started nothing
    action = f"/dashboard/jobs/{job_id}/view/rerun"
    assert f'action="{action}"' in page
    refused = owner.post(action, data={"csrf_token": "forged"})
    assert refused.status_code == 403 and _jobs(world) == before
    made = owner.post(action, data={"csrf_token": csrf_of(page)})
    assert made.status_code == 303, made.text
    new_id = int(made.headers["location"].rsplit("/", 1)[1])
    assert _jobs(world) == before + 1
    job = world.app.services.jobs.get(world.owner.user, new_id)
    old = world.app.services.jobs.get(world.owner.user, job_id)
    assert (job.kind, job.params, job.project_id) == (old.kind, old.params, old.project_id)
    done = wait_until(
        lambda: (
            (j := world.app.services.jobs.get(world.owner.user, new_id)).state
            in ("completed", "failed")
            and j
        ),
        timeout=60,
    )
    assert done.state == "completed"


def test_another_user_gets_404_at_every_address_of_every_view(world: World, mine: Api) -> None:
    app = mine
    mallory = app.account("mallory")
    client = sign_in(app, mallory.key)
    owner = sign_in(app, world.owner.key)
    addresses: list[str] = []
    for kind, jobs in world.jobs.items():
        base = f"/dashboard/jobs/{jobs[-1]}/view"
        addresses += [base, f"{base}/tables/1.csv"]
        if kind in ("rank_check", "keyword_research"):
            addresses.append(f"{base}?sort=keyword&order=desc")
    rank = world.last("rank_check")
    addresses.append(f"/dashboard/jobs/{rank}/view?subject=desktop/2840/en/garden+hose")
    for address in addresses:
        assert owner.get(address).status_code == 200, address
        shown = client.get(address)
        assert shown.status_code == 404, address
        assert "text/html" in shown.headers["content-type"], address
    token = csrf_of(client.get("/dashboard/new").text)  # mallory's own, valid token
    for jobs in world.jobs.values():
        rerun = client.post(f"/dashboard/jobs/{jobs[-1]}/view/rerun", data={"csrf_token": token})
        assert rerun.status_code == 404, rerun.text
    assert world.app.services.jobs.page(mallory.user, limit=10) == []
