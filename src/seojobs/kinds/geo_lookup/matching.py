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
    folded = _fold(_URL.sub(" ", text))
    return sum(len(brand_pattern(b).findall(folded)) for b in brands)


def analyse(
    answer: Answer, domain: str | None, brands: list[str], checked_at: str
) -> dict[str, Any]:
    """One answer as stored: its text (capped), its citations in order (each URL once), and
    whether and where the domain is cited and the brand named."""
    citations: list[dict[str, Any]] = []
    seen: set[str] = set()
    for cited in answer.citations:
        url = clean_url(cited.url)
        if url in seen:
            continue
        seen.add(url)
        citations.append({"url": url, "domain": host_of(url), "title": cited.title})
    position = None
    if domain is not None:
        position = next((n for n, c in enumerate(citations, 1) if cites(c["domain"], domain)), None)
    count = mentions(answer.text, brands) if brands else 0
    return {
        "text": answer.text[:MAX_ANSWER_CHARS],
        "truncated": len(answer.text) > MAX_ANSWER_CHARS,
        "citations": citations,
        "domain_cited": position is not None,
        "citation_position": position,
        "brand_mentioned": count > 0,
        "mention_count": count,
        "model": answer.model,
        "checked_at": checked_at,
    }


def summary(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """A prompt's answers together: cited or named in any, the best position, the shares."""
    n = len(answers)
    cited = [a for a in answers if a["domain_cited"]]
    named = [a for a in answers if a["brand_mentioned"]]
    positions = [a["citation_position"] for a in cited]
    return {
        "domain_cited": bool(cited),
        "citation_position": min(positions) if positions else None,
        "brand_mentioned": bool(named),
        "mention_count": sum(a["mention_count"] for a in answers),
        "cited_share": round(len(cited) / n, 4) if n else 0.0,
        "mentioned_share": round(len(named) / n, 4) if n else 0.0,
        "answers": answers,
    }
