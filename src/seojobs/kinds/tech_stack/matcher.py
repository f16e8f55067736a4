"""Match a page against the fingerprints: what each pattern found, then the relations.

Order, as documented in the README: technologies whose patterns match (``requires`` /
``requiresCategory`` only once what they require was found), their confidences summed per
technology (capped at 100), then ``implies`` (transitively; an implied technology gets the
lower of its implier's confidence and the tag's), then ``excludes`` (which win over both).

Every search has a timeout, and the whole page a budget; a pattern that times out is
reported in ``skipped`` and not searched again by this worker.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from seojobs.kinds.tech_stack.database import Fingerprints, Technology
from seojobs.kinds.tech_stack.page import PageFacts
from seojobs.kinds.tech_stack.patterns import Pattern, PatternTimeout

EVIDENCE_CHARS = 200
MAX_EVIDENCE = 10  # per technology


@dataclass(frozen=True)
class Limits:
    timeout: float  # seconds, one search
    budget: float  # seconds, one page


@dataclass
class Hit:
    tech: Technology
    confidence: int = 0
    versions: list[str] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    implied_by: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    hits: dict[str, Hit]
    skipped: list[dict[str, Any]]


def _texts(facts: PageFacts, name: str, key: str | None) -> Iterator[tuple[str | None, str]]:
    """(the name it was found under, the text) for one pattern field."""
    if name in ("headers", "cookies", "meta"):
        pairs = {"headers": facts.headers, "cookies": facts.cookies, "meta": facts.meta}[name]
        yield from ((k, v) for k, v in pairs if k == key)
    elif name == "scriptSrc":
        yield from ((None, src) for src in facts.script_src)
    elif name == "scripts" and facts.scripts:
        yield None, facts.scripts
    elif name == "html" and facts.html:
        yield None, facts.html
    elif name == "url":
        yield None, facts.url


def _absent(facts: PageFacts, name: str, pattern: Pattern) -> bool:
    """Whether the page surely lacks what the pattern requires (its literal is nowhere in
    the field's casefolded text): then no search is needed. Large fields only."""
    folded = {
        "html": facts.html_folded,
        "scripts": facts.scripts_folded,
        "scriptSrc": facts.script_src_folded,
    }.get(name)
    return folded is not None and pattern.literal is not None and pattern.literal not in folded


class _Run:
    def __init__(self, db: Fingerprints, facts: PageFacts, limits: Limits) -> None:
        self.db = db
        self.facts = facts
        self.limits = limits
        self.deadline = time.monotonic() + limits.budget
        self.skipped: list[dict[str, Any]] = []
        self.out_of_time = False

    def _search(self, tech: Technology, name: str, pattern: Pattern, text: str) -> Any:
        try:
            return pattern.search(text, self.limits.timeout)
        except PatternTimeout:
            self._skip(tech, name, pattern, "timeout")
            return None

    def _skip(self, tech: Technology, name: str, pattern: Pattern, reason: str) -> None:
        self.skipped.append(
            {
                "technology": tech.name,
                "field": name,
                "pattern": pattern.source[:EVIDENCE_CHARS],
                "reason": reason,
            }
        )

    def evaluate(self, tech: Technology) -> Hit | None:
        hit = Hit(tech)
        for name, pairs in tech.patterns.items():
            for key, pattern in pairs:
                if pattern.timed_out:  # on an earlier page: said on each page it skips
                    self._skip(tech, name, pattern, "timed_out_before")
                if not pattern.usable or _absent(self.facts, name, pattern):
                    continue
                if time.monotonic() > self.deadline:
                    self.out_of_time = True
                    return None
                for found_under, text in _texts(self.facts, name, key):
                    match = self._search(tech, name, pattern, text)
                    if match is not None:
                        _record(hit, name, found_under, text, pattern, match)
                        break  # one match per pattern counts
        return hit if hit.evidence else None


def _record(hit: Hit, name: str, key: str | None, text: str, pattern: Pattern, match: Any) -> None:
    version = pattern.version(match)
    hit.confidence = min(100, hit.confidence + pattern.tags.confidence)
    if version and version not in hit.versions:
        hit.versions.append(version)
    if len(hit.evidence) < MAX_EVIDENCE:
        shown = text if name in ("headers", "cookies", "meta", "scriptSrc", "url") else match[0]
        evidence: dict[str, Any] = {"field": name, "pattern": pattern.source[:EVIDENCE_CHARS]}
        if key is not None:
            evidence["name"] = key
        evidence["value"] = shown[:EVIDENCE_CHARS]
        if pattern.tags.confidence != 100:
            evidence["confidence"] = pattern.tags.confidence
        if version:
            evidence["version"] = version
        hit.evidence.append(evidence)


def _required(tech: Technology, hits: dict[str, Hit]) -> bool:
    if any(name not in hits for name in tech.requires):
        return False
    found_cats = {c for hit in hits.values() for c in hit.tech.cats}
    return all(c in found_cats for c in tech.requires_category)


def _imply(hits: dict[str, Hit], db: Fingerprints) -> None:
    queue = list(hits.values())
    while queue:
        hit = queue.pop()
        for name, confidence in hit.tech.implies:
            tech = db.technologies.get(name)
            if tech is None:
                continue
            implied = hits.get(name)
            if implied is None:
                implied = hits[name] = Hit(tech, min(hit.confidence, confidence))
                queue.append(implied)
            if hit.tech.name not in implied.implied_by:
                implied.implied_by.append(hit.tech.name)


def _exclude(hits: dict[str, Hit]) -> None:
    excluded = {name for hit in hits.values() for name in hit.tech.excludes}
    for name in excluded:
        hits.pop(name, None)


def match(db: Fingerprints, facts: PageFacts, limits: Limits) -> Outcome:
    run = _Run(db, facts, limits)
    hits: dict[str, Hit] = {}
    waiting = []
    for tech in db.technologies.values():
        if tech.requires or tech.requires_category:
            waiting.append(tech)
        elif tech.patterns and (hit := run.evaluate(tech)):
            hits[tech.name] = hit
    # What requires another is looked for once that one is found (and may enable more).
    progress = True
    while waiting and progress and not run.out_of_time:
        progress = False
        for tech in list(waiting):
            if _required(tech, hits):
                waiting.remove(tech)
                progress = True
                if hit := run.evaluate(tech):
                    hits[tech.name] = hit
    if run.out_of_time:
        run.skipped.append({"reason": "budget", "budget_seconds": limits.budget})
    _imply(hits, db)
    _exclude(hits)
    return Outcome(hits, run.skipped)
