"""Which listing is the project's business: by place id, by website domain, or by name.

Tried in that order over the listings, best-placed first; the first rule that finds one
decides (``matched_by`` says which):

- ``place_id``: Google's place id (``ChIJ...``) or its CID (digits), as the listing carries it;
- ``domain``: the listing's website is on the business's registrable domain (the public
  suffix list, ``seojobs.providers.domains``: ``shop.acme.co.uk`` is ``acme.co.uk``; a
  listing on ``acme.co.uk.evil.example`` is not);
- ``name``: the listing's name, normalised (case, accents, punctuation and spacing ignored:
  "Café-Acme" is "cafe acme"), is one of the names or begins with one as whole words
  ("Acme Plumbing" matches "Acme Plumbing - Downtown", not "Acme Plumbingworks").
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from seojobs.providers import domains
from seojobs.providers.local_ranks import Place
from seojobs.providers.urlmatch import parse

_NOT_WORD = re.compile(r"[\W_]+")


@dataclass(frozen=True)
class Business:
    place_id: str | None = None
    domain: str | None = None
    names: tuple[str, ...] = ()


def normalised(name: str) -> str:
    """A name without case, accents, punctuation or extra spaces."""
    decomposed = unicodedata.normalize("NFKD", name.casefold())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(_NOT_WORD.sub(" ", bare).split())


def website_site(url: str) -> str | None:
    """A website's registrable domain (a bare host is taken as one)."""
    try:
        host = parse(url if "://" in url else f"https://{url}").host
    except ValueError:
        return None
    return domains.registrable(host)


def by_place_id(place: Place, place_id: str) -> bool:
    return place_id in (place.place_id, place.cid)


def by_domain(place: Place, domain: str) -> bool:
    if not place.website:
        return False
    wanted = domains.registrable(domain)
    return wanted is not None and website_site(place.website) == wanted


def by_name(place: Place, names: Sequence[str]) -> bool:
    title = normalised(place.title)
    for name in names:
        wanted = normalised(name)
        if wanted and (title == wanted or title.startswith(wanted + " ")):
            return True
    return False


def find(places: Sequence[Place], business: Business) -> tuple[Place, str] | None:
    """The business's best-placed listing and the rule that found it; None when absent."""
    ordered = sorted(places, key=lambda p: p.position)
    rules: list[tuple[str, Callable[[Place], bool]]] = []
    if business.place_id:
        rules.append(("place_id", functools.partial(by_place_id, place_id=business.place_id)))
    if business.domain:
        rules.append(("domain", functools.partial(by_domain, domain=business.domain)))
    if business.names:
        rules.append(("name", functools.partial(by_name, names=business.names)))
    for rule, test in rules:
        for place in ordered:
            if test(place):
                return place, rule
    return None
