"""Share of voice in AI answers: how much of the tracked parties' visibility (the project and
its competitors) over a lookup's prompts and every engine that answered them is the project's.

Each answered prompt of one engine (its latest answer: the lookup's own, and for the engines it
did not ask, their latest published one of the same prompt) gives each party points:

- citation: ``CITED_WEIGHT`` x the share of the prompt's answers citing its site x
  ``1 / position`` of its best citation (first source 1, second 0.5, third 0.33...);
- mention: ``MENTIONED_WEIGHT`` x the share of answers naming it x ``1 / order`` among the
  tracked names (named first 1, second 0.5...).

A party's share of voice is its points over the points of every party, 0 to 1 (the parties'
shares add up to 1 when any was seen); ``by_provider`` gives the same over one engine's answers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

CITED_WEIGHT = 0.5
MENTIONED_WEIGHT = 0.5
PROJECT = ""  # the project's key among the parties (a competitor's is its domain)


def _inverse(position: Any) -> float:
    ok = isinstance(position, int) and not isinstance(position, bool) and position >= 1
    return 1 / position if ok else 0.0


def _number(value: Any) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else 0.0


def points(row: Mapping[str, Any]) -> float:
    """One party's points in one answered prompt (a row, or a competitor's entry in one)."""
    cited = _number(row.get("cited_share")) * _inverse(row.get("citation_position"))
    position = row.get("brand_position", row.get("mention_position"))
    named = _number(row.get("mentioned_share")) * _inverse(position)
    return CITED_WEIGHT * cited + MENTIONED_WEIGHT * named


def _share(part: float, total: float) -> float:
    return round(part / total, 4) if total else 0.0


def share_of_voice(
    rows: Iterable[Mapping[str, Any]], domain: str | None, competitors: list[str]
) -> dict[str, Any]:
    """The shares of the project and each competitor (``competitors``: their domains) over
    ``rows`` (one answered prompt of one engine each)."""
    parties = [PROJECT, *competitors]
    total: dict[str, float] = defaultdict(float)
    by_engine: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    cited: dict[str, int] = defaultdict(int)
    named: dict[str, int] = defaultdict(int)
    answers = 0
    prompts: set[str] = set()
    for row in rows:
        answers += 1
        prompts.add(str(row.get("prompt")).casefold())
        engine = str(row.get("provider"))
        entries = {PROJECT: row}
        for seen in row.get("competitors") or []:
            if isinstance(seen, dict) and seen.get("domain") in competitors:
                entries[seen["domain"]] = seen
        for party, seen in entries.items():
            earned = points(seen)
            total[party] += earned
            by_engine[engine][party] += earned
            cited[party] += bool(seen.get("domain_cited", seen.get("cited")))
            named[party] += bool(seen.get("brand_mentioned", seen.get("mentioned")))
    whole = sum(total[p] for p in parties)

    def entry(party: str) -> dict[str, Any]:
        return {
            "share": _share(total[party], whole),
            "cited_in": cited[party],
            "mentioned_in": named[party],
            "by_provider": {
                engine: _share(earned[party], sum(earned[p] for p in parties))
                for engine, earned in sorted(by_engine.items())
            },
        }

    return {
        "prompts": len(prompts),
        "answers": answers,
        "providers": sorted(by_engine),
        "project": {"domain": domain, **entry(PROJECT)},
        "competitors": [{"domain": c, **entry(c)} for c in competitors],
    }
