"""The regexes the OpenAPI document states match exactly what the parsers take: a value built
from the schema is never refused (schemathesis' positive_data_acceptance)."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from seojobs.api import create_app
from seojobs.api.ids import MAX_ID, digits_pattern, id_list_pattern, parse_ids, whole_number
from seojobs.api.inputs import STORABLE_JSON_NAME
from seojobs.api.openapi import complete
from seojobs.api.problems import Problem
from seojobs.api.projects_models import ProjectIn
from seojobs.api.text import NAME_PATTERN
from seojobs.api.v2_models import V2ReportRequest
from seojobs.engine.registry import Kind, Registry
from seojobs.fetch.rfc3986 import parse
from seojobs.kinds import index_submit, load_registry
from seojobs.kinds.urls import URL_PATTERN, check_url
from tests.conftest import make_settings
from tests.kinds import NoopParams, noop

RANGES = [(1, MAX_ID), (0, 2**31 - 1), (1, 1000), (1, 65535), (1, 9), (0, 10)]


def _takes(value: str, lo: int, hi: int) -> bool:
    try:
        whole_number(value, lo, hi)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("lo", "hi"), RANGES)
def test_digits_pattern_is_exactly_whole_number(lo: int, hi: int) -> None:
    pattern = re.compile(f"^{digits_pattern(lo, hi)}$")
    edges = [hi - 1, hi, hi + 1, hi * 10, lo, lo - 1, 10 ** len(str(hi)) - 1]
    values = [str(n) for n in range(0, 1100)] + [str(n) for n in edges if n >= 0]
    values += ["0" + str(hi), "00", "", "0001", "-1", "+1", "1.0", "٣", " 1"]
    for value in values:
        assert bool(pattern.match(value)) == _takes(value, lo, hi), value


@given(st.from_regex(id_list_pattern(5), fullmatch=True))
@settings(max_examples=300, database=None)
def test_every_id_list_the_pattern_allows_is_taken(ids: str) -> None:
    parse_ids(ids, most=5)


@pytest.mark.parametrize("ids", ["1,2,3,4,5,6", "0", "1,x", str(MAX_ID + 1), "1 ,2"])
def test_id_lists_the_parser_refuses_do_not_match(ids: str) -> None:
    assert not re.match(id_list_pattern(5), ids)
    with pytest.raises(Problem):
        parse_ids(ids, most=5)


@given(st.from_regex(URL_PATTERN, fullmatch=True).filter(lambda url: len(url) <= 2048))
@settings(max_examples=500, database=None)
def test_every_url_the_pattern_allows_is_an_absolute_http_url(url: str) -> None:
    # The pattern is check_url's one rule, so it must itself be right: what it allows is an
    # http(s) IRI whose URI (what is stored) the fetcher parses, with a host, a usable port and
    # no credentials, and which is taken again as it is (stored params are validated again).
    uri = check_url(url)
    assert check_url(uri) == uri
    assert uri.isascii() and (uri == url) == url.isascii()
    parts = urlsplit(uri)  # validates a bracketed IPv6 host, and the port
    assert parts.scheme.lower() in ("http", "https") and parts.hostname
    assert parts.port != 0 and "@" not in parts.netloc
    if parts.netloc.startswith("["):
        ipaddress.IPv6Address(parts.hostname)
    reference = parse(uri)
    assert reference.scheme in ("http", "https") and reference.host


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1]/",
        "http://[2001:db8::1]:8080/a?b#c",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "http://[1:2:3:4:5:6:7:8]/",
        # each way an IPv6 address ends (RFC 3986 3.2.2): the ls32 forms share one spelling
        "http://[1:2:3:4:5:6:1.2.3.4]/",
        "http://[::2:3:4:5:6:7:8]/",
        "http://[1:2::3:4:5:6:7]/",
        "http://[1:2:3:4:5::1.2.3.4]/",
        "http://[1:2:3:4:5:6::7]/",
        "http://[1:2:3:4:5:6:7::]/",
        "https://a.com",
        "https://a.com?x=1",
        "https://a.com/caf%C3%A9",
        "HTTP://A.COM:00080/x/y;z=1",
        "https://a.com/a:b@c/d?e=/f?#g",
    ],
)
def test_urls_taken_match(url: str) -> None:
    assert re.fullmatch(URL_PATTERN, url)
    assert check_url(url) == url


@pytest.mark.parametrize(
    ("iri", "uri"),
    [
        ("https://bücher.de/straße", "https://xn--bcher-kva.de/stra%C3%9Fe"),
        ("http://a.com/é", "http://a.com/%C3%A9"),
        (
            "HTTPS://BÜCHER.de:8443/ä?ö=ü#ß",
            "HTTPS://xn--bcher-kva.de:8443/%C3%A4?%C3%B6=%C3%BC#%C3%9F",
        ),
        ("http://пример.рф/", "http://xn--e1afmkfd.xn--p1ai/"),
        ("http://例え.テスト/パス", "http://xn--r8jz45g.xn--zckzah/%E3%83%91%E3%82%B9"),
        ("http://[::1]/ä", "http://[::1]/%C3%A4"),
        ("http://a.com/😀", "http://a.com/%F0%9F%98%80"),
        # No valid IDN (a symbol, a hyphen at the end): RFC 3987's other mapping, UTF-8.
        ("http://☃.net/", "http://%E2%98%83.net/"),
        ("http://ü-.de/", "http://%C3%BC-.de/"),
    ],
)
def test_iris_are_taken_as_the_uris_they_map_to(iri: str, uri: str) -> None:
    assert re.fullmatch(URL_PATTERN, iri)
    assert check_url(iri) == uri
    assert check_url(uri) == uri


def test_the_length_counts_the_percent_encoded_url() -> None:
    base = "http://a.com/"
    assert check_url(base + "a" * (2048 - len(base))) == base + "a" * (2048 - len(base))
    with pytest.raises(ValueError, match="once its non-ASCII characters are percent-encoded"):
        check_url(base + "é" * 1000)  # 1013 characters, 6013 once encoded


@pytest.mark.parametrize(
    "url",
    [
        "",
        "ftp://a.com",
        "http://",
        "http://a.com:0",
        "http://a.com:65536",
        "http://u@a.com",
        "http://u:pw@a.com/",
        "http://a.com/a b",
        "//a.com",
        "http://a.com:x",
        # what check_url took before the pattern was its rule (the document refused them)
        " http://a.com",
        "http://a.com/\n",
        "http://a.com/\u008a",
        "http://a.com/\u2028 ",
        "http://a.com/%zz",
        "http://a.com/%4",
        "http://a.com/<x>",
        'http://a.com/"',
        "http://a.com/{x}",
        "http://a.com/a#b#c",
        "http://[:::]/",
        "http://[1::2::3]/",
        "http://[1:2:3:4:5:6:7:8:9]/",
        "http://[1:2:3:4:5:6:7:1.2.3.4]/",
        "http://[1:2:3:4:5:6::1.2.3.4]/",
        "http://[::1:2:3:4:5:6:7:8]/",
        "http://[1:2:3:4:5:6:7:8::]/",
        "http://[::1/",
        "http://a_b.com/",
    ],
)
def test_urls_refused_do_not_match(url: str) -> None:
    assert not re.fullmatch(URL_PATTERN, url)
    with pytest.raises(ValueError):
        check_url(url)


# -- the document as the app completes it (seojobs.api.openapi) ---------------------------------


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    # Built, never started: the document needs the routes and the registry, not the database.
    url = f"sqlite:///{tmp_path_factory.mktemp('doc') / 'seojobs.db'}"
    return create_app(make_settings(url), run_worker=False, auto_migrate=False)


@pytest.fixture(scope="module")
def document(app: FastAPI) -> dict[str, Any]:
    return app.openapi()


def _kind_branches(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (one_of,) = [part["oneOf"] for part in model["allOf"]]
    return {branch["properties"]["type"]["const"]: branch for branch in one_of}


def test_a_new_jobs_type_names_the_registered_types_each_with_its_params(
    document: dict[str, Any],
) -> None:
    registry = load_registry(make_settings("sqlite://"))
    model = document["components"]["schemas"]["JobIn"]
    assert model["properties"]["type"]["enum"] == registry.names()
    branches = _kind_branches(model)
    assert sorted(branches) == registry.names()
    submit = branches["index_submit"]
    assert submit["required"] == ["params"]  # its params have required fields (urls)
    assert submit["properties"]["params"]["properties"]["checker"]
    assert "params" not in branches["test_noop"].get("required", [])  # {} is valid params


def test_a_schedules_type_names_only_schedulable_types(app: FastAPI) -> None:
    registry = Registry()
    registry.add(index_submit.KIND)
    registry.add(Kind("once", NoopParams, noop, schedulable=False))
    document = get_openapi(title="t", version="1", routes=app.routes)
    complete(document, registry, make_settings("sqlite://"))
    jobs, schedules = (document["components"]["schemas"][n] for n in ("JobIn", "ScheduleIn"))
    assert jobs["properties"]["type"]["enum"] == ["index_submit", "once"]
    assert schedules["properties"]["type"]["enum"] == ["index_submit"]
    assert sorted(_kind_branches(schedules)) == ["index_submit"]
    assert len(schedules["oneOf"]) == 3  # every_days, every_seconds or cron: still exactly one


def test_collected_data_paths_name_the_types(document: dict[str, Any]) -> None:
    names = load_registry(make_settings("sqlite://")).names()
    for path in (
        "/v1/projects/{project_id}/data/{type}",
        "/v1/projects/{project_id}/data/{type}/history",
    ):
        (kind,) = [p for p in document["paths"][path]["get"]["parameters"] if p["name"] == "type"]
        assert kind["schema"]["enum"] == names


def test_every_operation_declares_the_problems_any_route_can_answer(
    document: dict[str, Any],
) -> None:
    missing = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            public = "health" in operation.get("tags", [])
            wanted = {"400", "408", "413", "414", "431", "503"} | (
                set() if public else {"401", "429"}
            )
            for status in sorted(wanted - set(operation["responses"])):
                missing.append(f"{method.upper()} {path} {status}")
    assert missing == []


def test_our_bodies_refuse_unknown_keys_and_v2_states_what_it_tolerates(
    document: dict[str, Any],
) -> None:
    schemas = document["components"]["schemas"]
    for name in ("SubmitRequest", "CheckRequest", "ProjectIn", "JobIn", "ScheduleIn"):
        assert schemas[name]["additionalProperties"] is False, name
    storable = schemas[STORABLE_JSON_NAME]
    for name in ("V2CreateRequest", "V2StatusRequest", "V2ReportRequest", "V2UrlRequest"):
        extras = schemas[name]
        assert extras["additionalProperties"] == {
            "$ref": f"#/components/schemas/{STORABLE_JSON_NAME}"
        }
        assert re.search(extras["propertyNames"]["pattern"], "a\x00b") is None
    strings = [part for part in storable["anyOf"] if part["type"] == "string"]
    assert re.search(strings[0]["pattern"], "a\x00b") is None
    assert re.search(strings[0]["pattern"], "ok") is not None


def test_the_v2_task_id_number_form_stays_exact_in_json() -> None:
    # Past 2**53 a JSON number is not the id its sender wrote (schemathesis sent
    # 9223372036854775999 for a maximum of 2**63-1): such ids go as strings.
    V2ReportRequest.model_validate({"task_id": 2**53 - 1})
    V2ReportRequest.model_validate({"task_id": 900.0})
    V2ReportRequest.model_validate({"task_id": str(MAX_ID)})
    for value in (2**53, MAX_ID, 2.0**60):
        with pytest.raises(ValidationError):
            V2ReportRequest.model_validate({"task_id": value})


def test_a_schedules_interval_bounds_are_the_settings(tmp_path: Path) -> None:
    """Stated from the settings, checked by the services with the same numbers: a schedule at
    the stated minimum is taken (tests/integration/test_schedules.py), below it refused."""
    settings = make_settings(
        f"sqlite:///{tmp_path / 'seojobs.db'}", schedule_min_interval_seconds=90, day_seconds=600
    )
    app = create_app(settings, run_worker=False, auto_migrate=False)
    model = app.openapi()["components"]["schemas"]["ScheduleIn"]["properties"]
    days, seconds = (model[f]["anyOf"][0] for f in ("every_days", "every_seconds"))
    assert (days["minimum"], days["maximum"]) == (90 / 600, 3650 * 86400 / 600)
    assert (seconds["minimum"], seconds["maximum"]) == (90, 3650 * 86400)


@pytest.mark.parametrize(
    ("name", "taken"),
    [
        (" a ", "a"),
        ("\ta b\r\n", "a b"),
        ("\u00a0", "\u00a0"),
        ("ü", "ü"),
        ("  ", None),
        (" \n", None),
        ("a\tb", None),
        ("\x1ca", None),
        ("a\x85", None),
    ],
)
def test_a_name_is_trimmed_as_its_pattern_says(name: str, taken: str | None) -> None:
    """A tab or newline around a name was stripped and taken, though the pattern refused it;
    a name of spaces was refused, though the pattern took it."""
    assert bool(re.fullmatch(NAME_PATTERN, name)) == (taken is not None)
    if taken is None:
        with pytest.raises(ValidationError):
            ProjectIn(name=name)
    else:
        assert ProjectIn(name=name).name == taken


def _patterns(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        own = [schema["pattern"]] if isinstance(schema.get("pattern"), str) else []
        return own + [p for value in schema.values() for p in _patterns(value)]
    if isinstance(schema, list):
        return [p for item in schema for p in _patterns(item)]
    return []


def test_schemathesis_keeps_every_pattern(document: dict[str, Any]) -> None:
    """Python's ``re`` took a surrogate range that the regex engine schemathesis validates with
    (Rust's, through jsonschema_rs) refuses: schemathesis dropped the URL rule and generated
    URLs without it."""
    # Imported here: every pytest process collects this module, and schemathesis costs about
    # 0.3 CPU-s to import (its pytest plug-in is off: pyproject.toml).
    from schemathesis.core.jsonschema.patterns import enforced_pattern

    patterns = set(_patterns(document))
    assert patterns
    assert [p for p in patterns if enforced_pattern(p) is None] == []


def _free_strings(schema: Any) -> list[dict[str, Any]]:
    if isinstance(schema, list):
        return [found for item in schema for found in _free_strings(item)]
    if not isinstance(schema, dict):
        return []
    own = [schema] if schema.get("type") == "string" and "enum" not in schema else []
    return own + [found for value in schema.values() for found in _free_strings(value)]


def test_no_query_string_parameter_admits_nul(document: dict[str, Any]) -> None:
    """The input gate refuses NUL in every query value; ``outcome=%00`` was schema-valid."""
    admitting = [
        f"{path} {parameter['name']}"
        for path, item in document["paths"].items()
        for operation in item.values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "query"
        for string in _free_strings(parameter["schema"])
        if re.search(string.get("pattern", ""), "\x00")
    ]
    assert admitting == []
