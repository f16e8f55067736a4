"""What one AI answer says about the project: is its site cited (and where), is its brand
named (and how often). Pure functions over an :class:`~seojobs.providers.ai_search.Answer`.

Sites: a citation's host matches the project's domain when it is the domain or one of its
subdomains, ``www.`` ignored on both sides (``blog.example.com`` cites ``example.com``;
``notexample.com`` does not), sites told apart by the public suffix list
(``seojobs.providers.domains``: ``co.uk`` is no one's site).
Brands: case-insensitive whole-word matches, where the
brand's words may be joined by spaces, hyphens, dots or nothing (``Acme Tools`` matches
``acme-tools`` and ``AcmeTools``) and accents are ignored (``Cafe`` matches ``Café``): the
cheap part of fuzzy matching, without a fuzzy-matching dependency.
"""

from __future__ import annotations

import contextlib
import functools
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import idna

from seojobs.providers import domains
from seojobs.providers.ai_search import Answer

MAX_ANSWER_CHARS = 4000  # an answer's text kept per repeat; the analysis sees all of it
# OpenAI tags every cited URL with ``utm_source=openai``: not part of the page's address.
_TRACKING = {("utm_source", "openai")}
# Links in an answer's text (OpenAI writes its citations inline): a brand in a URL is no
# mention.
_URL = re.compile(r"https?://[^\s)\]>]+")


def host_of(url: str) -> str | None:
    """A URL's host, lower-case ASCII (IDNA), without ``www.``; None when it has none."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    if not host:
        return None
    # A name that is no valid IDN is kept as given: it matches no domain the params take.
    with contextlib.suppress(UnicodeError):
        host = idna.encode(host, uts46=True).decode("ascii")
    return domains.site(host)


def cites(host: str | None, domain: str) -> bool:
    """Is ``host`` (from :func:`host_of`) the ``domain`` or one of its subdomains?"""
    return host is not None and domains.on_site(host, domain)


def clean_url(url: str) -> str:
    """The cited URL without the provider's own tracking parameter."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    kept = [pair for pair in query if pair not in _TRACKING]
    if len(kept) == len(query):
        return url
    return urlunsplit(parts._replace(query=urlencode(kept)))


def _fold(text: str) -> str:
    """Case and accents folded, so ``Café`` and ``CAFE`` compare equal."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@functools.lru_cache(maxsize=256)
def brand_pattern(brand: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in re.split(r"[\s\-_.]+", _fold(brand)) if w]
    joined = r"[\s\-_.]?".join(words)
    return re.compile(rf"(?<!\w){joined}(?!\w)")


def mentions(text: str, brands: list[str]) -> int:
    """How often any of ``brands`` is named in ``text`` (whole words, outside links)."""
    return named(_folded(text), brands)[0]


def _folded(text: str) -> str:
    return _fold(_URL.sub(" ", text))


def named(folded: str, brands: Sequence[str]) -> tuple[int, int | None]:
    """How often any of ``brands`` is named in ``folded`` (from :func:`_folded`), and where
    first (an offset: only compared with another party's)."""
    count, first = 0, None
    for brand in brands:
        for found in brand_pattern(brand).finditer(folded):
            count += 1
            first = found.start() if first is None else min(first, found.start())
    return count, first


def _party(
    folded: str, citations: list[dict[str, Any]], domain: str | None, brands: Sequence[str]
) -> dict[str, Any]:
    position = None
    if domain is not None:
        position = next((n for n, c in enumerate(citations, 1) if cites(c["domain"], domain)), None)
    count, first = named(folded, brands) if brands else (0, None)
    return {"position": position, "count": count, "first": first}


def _mention_order(parties: list[dict[str, Any]]) -> None:
    """Each named party's ``mention_position``: 1 for the first named in the answer."""
    named_first = sorted((p["first"], n) for n, p in enumerate(parties) if p["first"] is not None)
    for order, (_first, n) in enumerate(named_first, 1):
        parties[n]["mention_position"] = order


def analyse(
    answer: Answer,
    domain: str | None,
    brands: list[str],
    checked_at: str,
    competitors: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """One answer as stored: its text (capped), its citations in order (each URL once), and
    whether and where the domain is cited and the brand named (``brand_position``: 1 when the
    brand is the first of the tracked names the answer gives), and the same of each
    competitor (``competitors``: each a ``domain`` and its ``names``)."""
    citations: list[dict[str, Any]] = []
    seen: set[str] = set()
    for cited in answer.citations:
        url = clean_url(cited.url)
        if url in seen:
            continue
        seen.add(url)
        host = host_of("https://" + cited.site) if cited.site else host_of(url)
        citations.append({"url": url, "domain": host, "title": cited.title})
    folded = _folded(answer.text)
    parties = [_party(folded, citations, domain, brands)]
    parties += [_party(folded, citations, c["domain"], c.get("names") or []) for c in competitors]
    _mention_order(parties)
    own = parties[0]
    return {
        "text": answer.text[:MAX_ANSWER_CHARS],
        "truncated": len(answer.text) > MAX_ANSWER_CHARS,
        "citations": citations,
        "domain_cited": own["position"] is not None,
        "citation_position": own["position"],
        "brand_mentioned": own["count"] > 0,
        "mention_count": own["count"],
        "brand_position": own.get("mention_position"),
        "competitors": [
            {
                "domain": c["domain"],
                "cited": p["position"] is not None,
                "citation_position": p["position"],
                "mentioned": p["count"] > 0,
                "mention_count": p["count"],
                "mention_position": p.get("mention_position"),
            }
            for c, p in zip(competitors, parties[1:], strict=True)
        ],
        "model": answer.model,
        "checked_at": checked_at,
    }


def _best(values: list[Any]) -> Any:
    found = [v for v in values if v is not None]
    return min(found) if found else None


def _share(part: int, n: int) -> float:
    return round(part / n, 4) if n else 0.0


def _competitors(answers: list[dict[str, Any]], names: Mapping[str, list[str]]) -> list[Any]:
    """Each competitor over a prompt's answers: cited or named in any, best positions, shares."""
    n = len(answers)
    found = []
    for index, (domain, brands) in enumerate(names.items()):
        each = [a["competitors"][index] for a in answers if len(a.get("competitors", ())) > index]
        found.append(
            {
                "domain": domain,
                "names": brands,
                "cited": any(c["cited"] for c in each),
                "citation_position": _best([c["citation_position"] for c in each]),
                "mentioned": any(c["mentioned"] for c in each),
                "mention_count": sum(c["mention_count"] for c in each),
                "mention_position": _best([c["mention_position"] for c in each]),
                "cited_share": _share(sum(1 for c in each if c["cited"]), n),
                "mentioned_share": _share(sum(1 for c in each if c["mentioned"]), n),
            }
        )
    return found


def summary(
    answers: list[dict[str, Any]], competitors: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """A prompt's answers together: cited or named in any, the best positions, the shares,
    and the same of each competitor."""
    n = len(answers)
    cited = [a for a in answers if a["domain_cited"]]
    named_in = [a for a in answers if a["brand_mentioned"]]
    names = {c["domain"]: list(c.get("names") or []) for c in competitors}
    return {
        "domain_cited": bool(cited),
        "citation_position": _best([a["citation_position"] for a in cited]),
        "brand_mentioned": bool(named_in),
        "mention_count": sum(a["mention_count"] for a in answers),
        "brand_position": _best([a.get("brand_position") for a in answers]),
        "cited_share": _share(len(cited), n),
        "mentioned_share": _share(len(named_in), n),
        "competitors": _competitors(answers, names),
        "answers": answers,
    }
