"""geo_lookup's pure parts: params, citation and brand matching, and each provider's answer
read from its documented JSON (the fakes' own answers, and malformed ones)."""

from __future__ import annotations

from typing import Any

import pytest

from seojobs.engine.registry import InvalidParams
from seojobs.kinds.geo_lookup import KIND
from seojobs.kinds.geo_lookup.matching import analyse, cites, clean_url, host_of, mentions, summary
from seojobs.providers import openai_responses, perplexity
from seojobs.providers.ai_search import Answer, Citation
from seojobs.providers.base import ProviderError, redacted
from tests.fakes.ai_search import Canned, FakeOpenAi, FakePerplexity

SOURCES = [
    ("https://www.acme.example/hoses", "Acme hoses"),
    ("https://review.example/best-hoses?ref=1", "Best hoses 2026"),
    ("https://blog.acme.example/guide", "Acme guide"),
]


def fields(params: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidParams) as caught:
        KIND.validate_new(params)
    return [e["field"] for e in caught.value.errors]


def test_params_trim_and_dedupe_prompts_and_brands_and_normalise_the_domain() -> None:
    params = KIND.validate_new(
        {
            "prompts": ["  best garden hose ", "Best Garden Hose", "hose reel?"],
            "brand": ["Acme", "ACME", "Acme Tools"],
            "domain": "Acme.Example",
            "repeats": 3,
        }
    )
    assert params.prompts == ["best garden hose", "hose reel?"]
    assert params.brand == ["Acme", "Acme Tools"]
    assert (params.domain, params.provider, params.repeats) == ("acme.example", None, 3)
    assert KIND.inputs(params) == ["best garden hose", "hose reel?"]
    assert KIND.validate_new({"prompts": ["q"], "brand": ["Acme"]}).repeats == 1


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"brand": ["Acme"]}, "prompts"),
        ({"prompts": [], "brand": ["Acme"]}, "prompts"),
        ({"prompts": ["q"] * 51, "brand": ["Acme"]}, "prompts"),
        ({"prompts": ["   "], "brand": ["Acme"]}, "prompts.0"),
        ({"prompts": ["a\nb"], "brand": ["Acme"]}, "prompts.0"),
        ({"prompts": ["q" * 401], "brand": ["Acme"]}, "prompts.0"),
        ({"prompts": ["q"]}, "brand"),
        ({"prompts": ["q"], "brand": []}, "brand"),
        ({"prompts": ["q"], "brand": "Acme"}, "brand"),
        ({"prompts": ["q"], "domain": "https://acme.example/"}, "domain"),
        ({"prompts": ["q"], "domain": "localhost"}, "domain"),
        ({"prompts": ["q"], "domain": "a.example", "repeats": 0}, "repeats"),
        ({"prompts": ["q"], "domain": "a.example", "repeats": 6}, "repeats"),
        ({"prompts": ["q"], "domain": "a.example", "repeats": True}, "repeats"),
        ({"prompts": ["q"], "domain": "a.example", "provider": "bard"}, "provider"),
        ({"prompts": ["q"], "domain": "a.example", "model": "x"}, "model"),
    ],
)
def test_bad_params_are_refused_naming_the_field(params: dict[str, Any], field: str) -> None:
    assert field in fields(params)


def test_a_domain_is_cited_by_itself_its_subdomains_and_www_but_not_lookalikes() -> None:
    assert host_of("https://WWW.Acme.Example:443/x") == "acme.example"
    assert host_of("https://bücher.example/") == "xn--bcher-kva.example"
    assert host_of("not a url") is None
    for url in ("https://acme.example/", "http://www.acme.example/a", "https://blog.acme.example"):
        assert cites(host_of(url), "acme.example"), url
    assert cites(host_of("https://shop.acme.example/"), "www.acme.example")
    for url in ("https://notacme.example/", "https://acme.example.evil.test/", "https://example/"):
        assert not cites(host_of(url), "acme.example"), url
    assert not cites(None, "acme.example")
    assert clean_url("https://a.example/x?utm_source=openai") == "https://a.example/x"
    assert clean_url("https://a.example/x?id=2&utm_source=openai") == "https://a.example/x?id=2"
    assert clean_url("https://a.example/x?utm_source=news") == "https://a.example/x?utm_source=news"


def test_brands_match_whole_words_in_any_case_spacing_and_accents() -> None:
    text = "ACME makes hoses; acme-tools and AcmeTools too. Acmeville is elsewhere. Café Noir!"
    assert mentions(text, ["Acme"]) == 2  # ACME, and the word acme in acme-tools
    assert mentions(text, ["Acme Tools"]) == 2
    assert mentions(text, ["cafe noir"]) == 1
    assert mentions("see https://acme.example/acme", ["Acme"]) == 0  # a link is no mention
    assert mentions("C++ and c++ again", ["C++"]) == 2
    assert mentions("nothing here", ["Acme", "Zeta"]) == 0


def test_an_answer_is_analysed_in_citation_order_each_url_once() -> None:
    answer = Answer(
        "Acme is good. " * 400,
        (
            Citation("https://review.example/a?utm_source=openai", "Review"),
            Citation("https://review.example/a", "Review again"),
            Citation("https://blog.acme.example/g", None),
        ),
        "gpt-5",
    )
    found = analyse(answer, "acme.example", ["acme"], "2026-12-04T10:00:00Z")
    assert [c["url"] for c in found["citations"]] == [
        "https://review.example/a",
        "https://blog.acme.example/g",
    ]
    assert [c["domain"] for c in found["citations"]] == ["review.example", "blog.acme.example"]
    assert (found["domain_cited"], found["citation_position"]) == (True, 2)
    assert (found["brand_mentioned"], found["mention_count"]) == (True, 400)
    assert len(found["text"]) == 4000 and found["truncated"]
    nothing = analyse(Answer("No idea."), None, ["Acme"], "t")
    assert (nothing["domain_cited"], nothing["citation_position"]) == (False, None)
    assert (nothing["brand_mentioned"], nothing["mention_count"]) == (False, 0)
    both = summary([found, nothing, found, nothing])
    assert (both["cited_share"], both["mentioned_share"]) == (0.5, 0.5)
    assert (both["domain_cited"], both["citation_position"], both["mention_count"]) == (
        True,
        2,
        800,
    )


def test_openai_responses_are_read_from_the_documented_shape() -> None:
    fake = FakeOpenAi()
    fake.default = Canned("Acme makes the best hose.", SOURCES)
    body = fake.response("best hose", [{"type": "web_search"}])
    answer = openai_responses.parse(body)
    assert answer.model == "gpt-5-2025-08-07"
    assert answer.text.startswith("Acme makes the best hose. ([Acme hoses](https://www.acme")
    assert [c.title for c in answer.citations] == [t for _u, t in SOURCES]
    assert answer.citations[1].url == "https://review.example/best-hoses?ref=1&utm_source=openai"
    refused = {"output": [{"type": "message", "content": [{"type": "refusal", "refusal": "No."}]}]}
    assert openai_responses.parse(refused) == Answer("No.", (), None)


def test_perplexity_answers_are_read_with_titles_from_search_results() -> None:
    fake = FakePerplexity()
    fake.default = Canned("Acme makes the best hose.", SOURCES)
    body = fake.completion("best hose", "sonar")
    answer = perplexity.parse(body)
    assert (answer.text, answer.model) == ("Acme makes the best hose. [1][2][3]", "sonar")
    assert [(c.url, c.title) for c in answer.citations] == SOURCES
    del body["citations"]  # newer answers carry search_results only
    assert [(c.url, c.title) for c in perplexity.parse(body).citations] == SOURCES


OPENAI_MALFORMED = [
    {},
    {"output": "text"},
    {"output": [{"type": "web_search_call"}]},
    {"output": [{"type": "message", "content": "text"}]},
    {"output": [{"type": "message", "content": ["text"]}]},
    {"output": [{"type": "message", "content": [{"type": "output_text", "text": 3}]}]},
    {"output": [{"type": "message", "content": [{"type": "output_text", "text": "a",
                 "annotations": [{"type": "url_citation", "url": None}]}]}]},
    {"status": "failed", "error": {"message": "server_error"}, "output": []},
]  # fmt: skip
PERPLEXITY_MALFORMED = [
    {},
    {"choices": []},
    {"choices": [{"message": {"content": None}}]},
    {"choices": [{"message": {"content": "a"}}], "citations": [3]},
    {"choices": [{"message": {"content": "a"}}], "search_results": {}},
]


@pytest.mark.parametrize("body", OPENAI_MALFORMED)
def test_malformed_openai_answers_are_malformed_responses(body: dict[str, Any]) -> None:
    with pytest.raises(ProviderError) as caught:
        openai_responses.parse(body)
    assert caught.value.code == "malformed_response"


@pytest.mark.parametrize("body", PERPLEXITY_MALFORMED)
def test_malformed_perplexity_answers_are_malformed_responses(body: dict[str, Any]) -> None:
    with pytest.raises(ProviderError) as caught:
        perplexity.parse(body)
    assert caught.value.code == "malformed_response"


def test_keys_are_cut_out_of_provider_error_text() -> None:
    text = "Incorrect API key provided: sk-tes*****6789. Also sk-live-secret and pplx-abc123."
    assert redacted(text, "sk-live-secret") == (
        "Incorrect API key provided: [key]. Also [key] and [key]."
    )
