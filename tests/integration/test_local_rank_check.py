"""``local_rank_check`` end to end: the HTTP API starts a check, the in-process worker asks local
fakes of SerpApi, DataForSEO and Serper (their documented wire formats, error bodies
included), and ``GET /v1/projects/{id}/local-rankings`` (and its history) read what was
collected. One app per store for the module (each test its own users and keywords: the
fakes' tables are keyed by keyword); the fakes' scripted replies are the module's, so a test
that scripts one leaves the queue empty."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from tests.api_helpers import Api, api, assert_problem, error_fields, stored
from tests.conftest import NO_PROVIDERS, database_of, make_settings
from tests.dashboard_helpers import sign_in
from tests.fakes.local import FakeDataForSeoLocal, FakeSerpApiLocal, FakeSerperLocal, listing
from tests.fakes.serp import Reply
from tests.fakes.server import serve
from tests.waiting import wait_until

ACME = listing(
    "Acme Plumbing - Downtown",
    place_id="ChIJacme0000000000000001",
    cid="1111111111111111111",
    website="https://www.shop.acme.co.uk/contact?utm_source=gmb",
    rating=4.7,
    reviews=312,
    categories=["Plumber", "Emergency plumber"],
    address="1 Main St",
)
RIVAL = listing("Pipes & Co", place_id="ChIJrival", cid="222", website="https://pipes.example/",
                rating=4.9, reviews=1204, categories=["Plumber"])  # fmt: skip
LOOKALIKE = listing("Acme Plumbingworks", website="https://acme.co.uk.evil.example/", rating=3.1,
                    reviews=4, categories=["Plumber"])  # fmt: skip
AUSTIN = "Austin,Texas,United States"
OTHER = listing("Drains R Us", website="https://drains.example/", rating=4.0, reviews=10)


@dataclass
class Fakes:
    serpapi: FakeSerpApiLocal
    dataforseo: FakeDataForSeoLocal
    serper: FakeSerperLocal

    def settings(self, url: str, **overrides: Any) -> Any:
        values: dict[str, Any] = {
            "serpapi_key": "serpapi-key",
            "serpapi_base_url": self.serpapi.base_url,
            "dataforseo_login": "dfs-login",
            "dataforseo_password": "dfs-password",
            "dataforseo_base_url": self.dataforseo.base_url,
            "serper_key": "serper-key",
            "serper_base_url": self.serper.base_url,
            "provider_backoff": 0.0,
            "provider_retries": 1,
            "local_rank_check_concurrency": 1,
        }
        return make_settings(url, **(values | overrides))


@pytest.fixture(scope="module")
def fakes(module_store: str) -> Iterator[Fakes]:
    made = Fakes(FakeSerpApiLocal(), FakeDataForSeoLocal(), FakeSerperLocal())
    with (
        serve(made.serpapi.app) as made.serpapi.base_url,
        serve(made.dataforseo.app) as made.dataforseo.base_url,
        serve(made.serper.app) as made.serper.base_url,
    ):
        yield made


@pytest.fixture(scope="module")
def shared(module_store: str, fakes: Fakes, request: pytest.FixtureRequest) -> Iterator[Api]:
    with database_of(module_store, request) as url, api(fakes.settings(url), run_worker=True) as a:
        a.shared = True
        yield a


@pytest.fixture
def app(shared: Api) -> Iterator[Api]:
    mine = shared.own()
    try:
        yield mine
    finally:
        mine.close()


def start(app: Api, **project: Any) -> tuple[httpx.Client, int]:
    client = app.client(app.account())
    made = client.post("/v1/projects", json={"name": "shop", **project})
    assert made.status_code == 201, made.text
    return client, made.json()["data"]["id"]


def check(client: httpx.Client, project: int, **params: Any) -> dict[str, Any]:
    """Start a local rank check and wait until it has ended; its job."""
    body = {"type": "local_rank_check", "params": params}
    answer = client.post(f"/v1/projects/{project}/jobs", json=body)
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["data"]["id"]

    def ended() -> dict[str, Any] | None:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()["data"]
        return job if job["status"] in ("completed", "failed") else None

    return wait_until(ended, timeout=60)


def local(client: httpx.Client, project: int, path: str = "", **query: Any) -> httpx.Response:
    return client.get(f"/v1/projects/{project}/local-rankings{path}", params=query)


def rows(answer: httpx.Response) -> dict[str, dict[str, Any]]:
    assert answer.status_code == 200, answer.text
    return {r["keyword"]: r for r in answer.json()["data"]}


def test_a_check_at_a_place_is_matched_collected_and_read_without_starting_jobs(
    app: Api, fakes: Fakes
) -> None:
    """SerpApi (the first in the default order) at a place name; the project's domain and
    brand names are the business when the job names none."""
    fakes.serpapi.places("plumber a1", RIVAL, LOOKALIKE, ACME, OTHER)
    fakes.serpapi.places("boiler repair a1", RIVAL, listing("ACME plumbing", rating=4.0))
    fakes.serpapi.places("drain a1", OTHER, LOOKALIKE)
    client, project = start(app, domain="acme.co.uk", brand_names=["Acme Plumbing"])
    before = stored(app)
    assert "local_rank_check" in assert_problem(local(client, project), 404)["detail"]
    assert_problem(local(client, project, "/history"), 404)
    assert stored(app) == before  # reads never start a job
    keywords = ["plumber a1", "Boiler repair A1", "drain a1"]
    writes: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO COLLECTIONS"):
            writes.append(statement)

    engine = app.services.db.engine
    event.listen(engine, "before_cursor_execute", seen)
    try:
        job = check(client, project, keywords=keywords, location="Austin,Texas,United States")
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert job["status"] == "completed", job
    assert len(writes) == 1  # the three keywords collected in one statement, not one each
    assert job["result"] == {"keywords": 3, "found": 2, "not_found": 1, "failed": 0,
                             "searches": 3, "provider": "serpapi"}  # fmt: skip
    jobs = stored(app)["jobs"]
    found = rows(local(client, project))
    plumber = found["plumber a1"]
    # By its website's registrable domain (www. and a subdomain of acme.co.uk), not the
    # look-alike host above it.
    assert (plumber["position"], plumber["matched_by"], plumber["title"]) == (
        3, "domain", "Acme Plumbing - Downtown")  # fmt: skip
    assert (plumber["rating"], plumber["reviews"], plumber["categories"]) == (
        4.7, 312, ["Plumber", "Emergency plumber"])  # fmt: skip
    assert plumber["place_id"] == "ChIJacme0000000000000001"
    assert [(a["position"], a["title"], a["domain"]) for a in plumber["above"]] == [
        (1, "Pipes & Co", "pipes.example"), (2, "Acme Plumbingworks", "evil.example")]  # fmt: skip
    assert plumber["business"] == {"place_id": None, "domain": "acme.co.uk",
                                   "names": ["Acme Plumbing"]}  # fmt: skip
    assert (plumber["job_id"], plumber["provider"], plumber["grid"]) == (job["id"], "serpapi", None)
    # No website: by its name, whatever its case.
    boiler = found["Boiler repair A1"]
    assert (boiler["position"], boiler["matched_by"], boiler["reviews"]) == (2, "name", None)
    drain = found["drain a1"]
    assert (drain["position"], drain["matched_by"], len(drain["above"])) == (None, None, 2)
    # The documented query: Maps, a search at a place name with its zoom; the key in the query.
    sent = [r.params for r in fakes.serpapi.requests if r.params.get("q") == "plumber a1"]
    assert sent == [{"engine": "google_maps", "type": "search", "q": "plumber a1", "hl": "en",
                     "location": "Austin,Texas,United States", "z": "14",
                     "api_key": "serpapi-key"}]  # fmt: skip
    # Reads: best first, filters, history; none starts a job.
    assert [r["keyword"] for r in local(client, project).json()["data"]] == [
        "Boiler repair A1", "plumber a1", "drain a1"]  # fmt: skip
    assert list(rows(local(client, project, keyword="PLUMBER A1"))) == ["plumber a1"]
    assert error_fields(local(client, project, surface="street")) == ["surface"]
    fakes.serpapi.places("plumber a1", ACME, RIVAL)
    again = check(client, project, keywords=["plumber a1"], location="Austin,Texas,United States")
    history = local(client, project, "/history", keyword="plumber a1").json()["data"]
    assert [(h["position"], h["job_id"]) for h in history] == [(1, again["id"]), (3, job["id"])]
    assert stored(app)["jobs"] == jobs + 1


PROVIDERS = [
    # provider, where, the business, what it is matched by
    ("serpapi", {"latitude": 30.2672, "longitude": -97.7431, "zoom": 13},
     {"place_id": "ChIJacme0000000000000001"}, "place_id"),
    ("dataforseo", {"location": "Austin,Texas,United States"}, {"domain": "acme.co.uk"}, "domain"),
    ("dataforseo", {"latitude": 30.2672, "longitude": -97.7431},
     {"place_id": "1111111111111111111"}, "place_id"),
    ("serper", {"latitude": 30.2672, "longitude": -97.7431, "zoom": 13},
     {"names": ["  café  ACME-plumbing "]}, "name"),
    ("serper", {"location": "Austin,Texas,United States"}, {"domain": "shop.acme.co.uk"}, "domain"),
    # The local pack of a web search: its place_id is the CID.
    ("serpapi", {"location": "Austin,Texas,United States", "surface": "local_pack"},
     {"place_id": "1111111111111111111"}, "place_id"),
]  # fmt: skip


@pytest.mark.parametrize(("provider", "where", "business", "rule"), PROVIDERS)
def test_each_provider_is_asked_its_way_and_the_business_matched(
    app: Api, fakes: Fakes, provider: str, where: dict[str, Any], business: dict[str, Any],
    rule: str,
) -> None:  # fmt: skip
    fake = getattr(fakes, provider)
    keyword = f"plumber {provider} {len(fake.requests)}"
    named = listing("Café Acme Plumbing", **{k: v for k, v in ACME.items() if k != "title"})
    fake.places(keyword, RIVAL, OTHER, named if rule == "name" else ACME)
    client, project = start(app)
    job = check(client, project, keywords=[keyword], provider=provider, **where, **business)
    assert job["status"] == "completed", job
    [row] = local(client, project).json()["data"]
    assert (row["position"], row["matched_by"], row["provider"]) == (3, rule, provider)
    assert (row["rating"], row["reviews"]) == (4.7, 312)
    assert row["categories"][0] == "Plumber"
    assert [a["title"] for a in row["above"]] == ["Pipes & Co", "Drains R Us"]
    [sent] = [r for r in fake.requests if keyword in str(r.body or r.params)]
    point = "latitude" in where
    if provider == "dataforseo":
        [task] = sent.body
        assert task["location_coordinate" if point else "location_name"] == (
            "30.2672,-97.7431,14z" if point else "Austin,Texas,United States")  # fmt: skip
        assert sent.path == "/v3/serp/google/maps/live/advanced"
    elif provider == "serper":
        assert sent.headers["x-api-key"] == "serper-key"
        where_sent = {"ll": "@30.2672,-97.7431,13z"} if point else {"location": AUSTIN}
        assert sent.body == {"q": keyword, "hl": "en"} | where_sent
    elif "surface" in where:
        assert (sent.params["engine"], sent.params["location"]) == ("google", AUSTIN)
    else:
        assert sent.params["ll"] == "@30.2672,-97.7431,13z"


def test_a_grid_gives_the_average_position_and_the_share_in_the_top_3(
    app: Api, fakes: Fakes
) -> None:
    """A 3x3 grid 2 km around the centre: north of the centre the business is listed 1st,
    on the centre's row 4th, south of it not at all."""
    centre = (30.2672, -97.7431)

    def by_row(lat: float | None, _lon: float | None, _where: str | None) -> list[Any]:
        assert lat is not None
        if lat > centre[0] + 0.001:
            return [ACME, RIVAL]
        if lat < centre[0] - 0.001:
            return [RIVAL, OTHER]
        return [RIVAL, OTHER, LOOKALIKE, ACME]

    fakes.dataforseo.rule("plumber grid", by_row)
    client, project = start(app)
    grid = {"size": 3, "radius_km": 2}
    where = {"latitude": centre[0], "longitude": centre[1], "grid": grid}
    job = check(client, project, keywords=["plumber grid"], domain="acme.co.uk",
                provider="dataforseo", **where)  # fmt: skip
    assert job["status"] == "completed", job
    assert (job["result"]["searches"], job["items_total"]) == (9, 9)
    [row] = local(client, project).json()["data"]
    assert row["position"] == 4  # at the centre
    summary = row["grid"]
    assert (summary["size"], summary["radius_km"], summary["points_answered"]) == (3, 2.0, 9)
    assert summary["average_position"] == round((1 * 3 + 4 * 3) / 6, 2)
    assert (summary["top3_share"], summary["found_share"]) == (round(3 / 9, 4), round(6 / 9, 4))
    positions = [p["position"] for p in summary["points"]]
    assert positions == [1, 1, 1, 4, 4, 4, None, None, None]  # north-west first
    middle = summary["points"][4]
    assert (middle["latitude"], middle["longitude"]) == centre
    # 2 km north is 2 / 111.195 degrees of latitude.
    assert summary["points"][1]["latitude"] == round(centre[0] + 2 / 111.19508, 6)
    coordinates = {t.body[0]["location_coordinate"] for t in fakes.dataforseo.requests
                   if t.body[0]["keyword"] == "plumber grid"}  # fmt: skip
    assert len(coordinates) == 9


FALLBACK = [
    # SerpApi first: a 503 to every call (retried once: two calls a search).
    (Reply(503, {"error": "Service Unavailable"}), "upstream_error", 4),
    # Its documented 401 (a refused key): not asked again in the job.
    (Reply(401, {"error": "Invalid API key. Your API key should be here: "
                 "https://serpapi.com/manage-api-key"}), "provider_auth_failed", 1),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "code", "calls"), FALLBACK)
def test_the_first_provider_failing_hands_every_search_to_the_next(
    app: Api, fakes: Fakes, reply: Reply, code: str, calls: int
) -> None:
    keywords = [f"plumber fallback {code} {n}" for n in range(2)]
    for keyword in keywords:
        fakes.serpapi.places(keyword, ACME)
        fakes.dataforseo.places(keyword, RIVAL, ACME)
    asked = len(fakes.serpapi.requests)
    fakes.serpapi.script(*[reply] * calls)
    client, project = start(app)
    job = check(client, project, keywords=keywords, location="Austin", domain="acme.co.uk")
    assert job["status"] == "completed", job
    assert job["result"]["answered_by"] == {"dataforseo": 2}
    assert job["result"]["failed_over"] == {"serpapi": 2}
    found = local(client, project).json()["data"]
    assert [(r["provider"], r["position"]) for r in found] == [("dataforseo", 2)] * 2
    assert {(f["provider"], f["code"]) for r in found for f in r["failed_over"]} == {
        ("serpapi", code)
    }
    assert len(fakes.serpapi.requests) - asked == calls


@pytest.mark.parametrize("provider", ["serpapi", "dataforseo", "serper"])
def test_a_rate_limited_search_is_retried_and_answered(
    app: Api, fakes: Fakes, provider: str
) -> None:
    """Each provider's documented rate-limit answer, once: the same provider answers the retry."""
    fake = getattr(fakes, provider)
    keyword = f"plumber throttled {provider}"
    fake.places(keyword, ACME)
    asked = len(fake.requests)
    fake.throttle()
    client, project = start(app)
    job = check(client, project, keywords=[keyword], latitude=1.0, longitude=2.0,
                domain="acme.co.uk", provider=provider)  # fmt: skip
    assert job["status"] == "completed", job
    [row] = local(client, project).json()["data"]
    assert (row["position"], row["provider"], row["failed_over"]) == (1, provider, [])
    assert len(fake.requests) - asked == 2


def test_a_providers_errors_never_show_its_key(app: Api, fakes: Fakes) -> None:
    """SerpApi takes its key in the query string; an error echoing it is cleared."""
    fakes.serpapi.places("plumber secret 2", ACME)
    echo = Reply(500, text="upstream failed for /search.json?api_key=serpapi-key&q=x")
    fakes.serpapi.script(echo, echo)
    client, project = start(app)
    job = check(client, project, keywords=["plumber secret 1", "plumber secret 2"],
                location="Austin", domain="acme.co.uk", provider="serpapi")  # fmt: skip
    assert job["status"] == "completed", job
    items = client.get(f"/v1/jobs/{job['id']}/items").json()["data"]
    [error] = [i["error"] for i in items if i.get("error")]
    assert error["code"] == "upstream_error"
    assert "serpapi-key" not in error["message"] and "[key]" in error["message"]


def test_spent_credits_end_the_job(app: Api, fakes: Fakes) -> None:
    fakes.serper.script(Reply(400, {"message": "Not enough credits", "statusCode": 400}))
    client, project = start(app)
    job = check(client, project, keywords=["a", "b"], latitude=1.0, longitude=2.0,
                domain="acme.co.uk", provider="serper")  # fmt: skip
    assert (job["status"], job["error"]["code"]) == ("failed", "provider_quota_exhausted"), job
    assert_problem(local(client, project), 404)


def test_searches_over_the_daily_quota_fail_with_quota_exceeded(app: Api, fakes: Fakes) -> None:
    fakes.dataforseo.places("plumber quota", ACME)
    owner = app.account()
    app.services.quotas.set_limits(owner.user, {"local_rank_searches_daily": 10})
    client = app.client(owner)
    project = client.post("/v1/projects", json={"name": "shop"}).json()["data"]["id"]
    where = {"latitude": 30.0, "longitude": -97.0, "domain": "acme.co.uk",
             "provider": "dataforseo"}  # fmt: skip
    first = check(client, project, keywords=["plumber quota"], grid={"size": 3, "radius_km": 1},
                  **where)  # fmt: skip
    second = check(client, project, keywords=["plumber quota", "x"], **where)
    assert first["status"] == "completed", first
    assert (second["status"], second["error"]["code"]) == ("failed", "quota_exceeded")
    usage = {q["quota"]: q for q in client.get("/v1/usage").json()["data"]}
    day = usage["local_rank_searches"]
    assert (day["limit"], day["used"], day["remaining"]) == (10, 9, 1)


def test_the_view_shows_the_positions_and_another_user_gets_404(app: Api, fakes: Fakes) -> None:
    fakes.serper.places("plumber view", RIVAL, ACME)
    owner = app.account()
    client = app.client(owner)
    project = client.post("/v1/projects", json={"name": "shop"}).json()["data"]["id"]
    job = check(client, project, keywords=["plumber view"], latitude=30.0, longitude=-97.0,
                domain="acme.co.uk", provider="serper")  # fmt: skip
    assert job["status"] == "completed", job
    before = stored(app)
    page = sign_in(app, owner.key).get(f"/dashboard/jobs/{job['id']}/view")
    assert page.status_code == 200, page.text
    assert "Local positions" in page.text and "plumber view" in page.text
    assert "Pipes &amp; Co" in page.text  # listed above
    assert "new" in page.text  # the first check of the keyword
    project_page = sign_in(app, owner.key).get(f"/dashboard/projects/{project}")
    assert ">Local rankings</h2>" in project_page.text
    other = sign_in(app, app.account().key)
    assert other.get(f"/dashboard/jobs/{job['id']}/view").status_code == 404
    assert stored(app)["jobs"] == before["jobs"]  # viewing never starts a job


def test_bad_params_and_unconfigured_providers_are_refused_naming_the_field(
    app: Api, fakes: Fakes, request: pytest.FixtureRequest
) -> None:
    client, project = start(app)
    before = stored(app)

    def post(params: dict[str, Any]) -> httpx.Response:
        body = {"type": "local_rank_check", "params": params}
        return client.post(f"/v1/projects/{project}/jobs", json=body)

    base = {"keywords": ["a"], "latitude": 1.0, "longitude": 2.0, "domain": "acme.co.uk"}
    cases = [
        ({**base, "keywords": []}, "params.keywords"),
        ({**base, "keywords": [f"k{i}" for i in range(21)]}, "params.keywords"),
        ({"keywords": ["a"], "domain": "acme.co.uk"}, "params.latitude"),
        ({**base, "longitude": None}, "params.longitude"),
        ({**base, "location": "Austin"}, "params.location"),
        ({**base, "latitude": 91}, "params.latitude"),
        ({**base, "longitude": -181}, "params.longitude"),
        ({**base, "zoom": 22}, "params.zoom"),
        ({**base, "zoom": 2}, "params.zoom"),
        ({**base, "grid": {"size": 4, "radius_km": 1}}, "params.grid.size"),
        ({**base, "grid": {"size": 9, "radius_km": 1}}, "params.grid.size"),
        ({**base, "grid": {"size": 3, "radius_km": 0}}, "params.grid.radius_km"),
        ({**base, "grid": {"size": 3, "radius_km": 51}}, "params.grid.radius_km"),
        ({**base, "grid": {"size": 7, "radius_km": 1}, "keywords": [f"k{i}" for i in range(11)]},
         "params.grid"),
        ({"keywords": ["a"], "location": "Austin", "grid": {"size": 3, "radius_km": 1},
          "domain": "acme.co.uk"}, "params.grid"),
        ({**base, "surface": "local_pack"}, "params.surface"),
        ({**base, "domain": None}, "params.place_id"),
        ({**base, "place_id": "ChIJ bad"}, "params.place_id"),
        ({**base, "names": ["x" * 101]}, "params.names[0]"),
        ({**base, "provider": "yelp"}, "params.provider"),
        ({**base, "provider": "serper", "surface": "local_pack", "location": "Austin",
          "latitude": None, "longitude": None}, "params.surface"),
    ]  # fmt: skip
    for params, field in cases:
        answer = post(params)
        assert_problem(answer, 422)
        assert field in error_fields(answer), (params, answer.text)
    assert stored(app) == before
    with database_of("sqlite", request) as url, api(make_settings(url, **NO_PROVIDERS)) as bare:
        bare_client = bare.client(bare.account())
        made = bare_client.post("/v1/projects", json={"name": "x"}).json()["data"]["id"]
        answer = bare_client.post(
            f"/v1/projects/{made}/jobs", json={"type": "local_rank_check", "params": base}
        )
        problem = assert_problem(answer, 422)
        assert problem["type"].endswith("/provider_not_configured")
        [error] = problem["errors"]
        assert error["field"] == "params.provider" and "SEOJOBS_SERPAPI_KEY" in error["message"]
