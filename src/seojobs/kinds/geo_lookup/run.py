"""The handler: each prompt (an item) asked ``repeats`` times, each answer analysed, then
every answered prompt stored as the project's collection (subject ``"<provider> <prompt>"``).

One item per prompt, its repeats run inside it, rather than one item per (prompt, repeat):
what a prompt's result means is the aggregate of its answers (the shares of answers citing
and mentioning), and an item's result is written in one transaction, so a prompt is
collected whole or not at all. The cost of that choice: a job rescued mid-prompt asks that
one prompt's repeats again (the finished prompts are never asked again).

Failures: refused credentials, spent credit or a refused model end the job (every prompt
would fail alike); a provider still failing after the bounded retries (429/5xx/transport)
or answering in an unexpected shape fails that prompt's item, and its remaining repeats are
not spent. A job where no prompt was answered fails with the first item's error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from seojobs.engine.context import ItemResult, JobContext, JobFailed
from seojobs.kinds import providers
from seojobs.kinds.fallback import Chain, Unanswered, hands_over
from seojobs.kinds.geo_lookup.declared import (
    VOICE,
    _missing,
    _named,
    subject,
)
from seojobs.kinds.geo_lookup.matching import analyse, summary
from seojobs.kinds.geo_lookup.params import PROVIDERS, GeoLookupParams
from seojobs.kinds.geo_lookup.voice import share_of_voice
from seojobs.providers.ai_overview import DataForSeoOverview, SerpApiOverview
from seojobs.providers.ai_search import AiSearch
from seojobs.providers.anthropic_search import AnthropicSearch
from seojobs.providers.base import (
    MALFORMED_RESPONSE,
    NOT_CONFIGURED,
    UPSTREAM_ERROR,
    ProviderError,
)
from seojobs.providers.gemini import GeminiSearch
from seojobs.providers.openai_responses import OpenAiSearch
from seojobs.providers.perplexity import PerplexitySearch
from seojobs.records import ItemRecord
from seojobs.timefmt import rfc3339

ANSWERED = "answered"
PROMPTS_AT_ONCE = 4  # provider calls in flight per job: AI answers take seconds each
ADAPTERS: dict[str, Any] = {
    "openai": OpenAiSearch,
    "perplexity": PerplexitySearch,
    "gemini": GeminiSearch,
    "anthropic": AnthropicSearch,
    "serpapi_ai_overview": SerpApiOverview,
    "dataforseo_ai_overview": DataForSeoOverview,
}
assert set(ADAPTERS) == set(PROVIDERS)  # a declaration, checked at import
ITEM_ERRORS = (UPSTREAM_ERROR, MALFORMED_RESPONSE)  # this prompt's trouble, not the job's


def _prompts_own(error: ProviderError) -> bool:
    """A failure that ends this prompt only: its trouble, or a provider down (another
    provider answers the next prompts)."""
    return error.code in ITEM_ERRORS or hands_over(error)


@dataclass
class Lookup:
    """A job's prompts asked of its providers (``chain``: the one its params name, else every
    configured one in order; the next answers what one fails for a reason not the prompt's
    own). A prompt's answers come from the provider that answered its first repeat."""

    ctx: JobContext[GeoLookupParams]
    chain: Chain[AiSearch]

    async def prompt(self, item: ItemRecord) -> ItemResult:
        params = self.ctx.params
        answers: list[dict[str, Any]] = []
        failed: list[dict[str, str]] = []
        chain = self.chain
        source = chain.first
        rivals = [c.model_dump() for c in params.competitors]
        for _ in range(params.repeats):
            await self.ctx.ensure_held()  # each call is billed: not for a job taken away
            try:
                answered = await chain.ask(lambda s: s.ask(item.input))
            except Unanswered as none:
                if self.chain.all_down or not _prompts_own(none.error):
                    raise JobFailed(none.error.code, none.error.message) from None
                failed += none.failed[:-1]
                result = self.result(item.input, answers, none.failed[-1]["provider"], failed)
                return ItemResult.error(none.error.code, none.error.message, result=result)
            failed += answered.failed
            if not answers:  # the repeats ask the provider that answered the first
                source = next(s for s in chain.sources if s.name == answered.provider)
                chain = Chain([source], chain.down)
            checked_at = rfc3339(datetime.now(UTC))
            answer = answered.value
            answers.append(analyse(answer, params.domain, params.brand or [], checked_at, rivals))
        result = self.result(item.input, answers, source.name, failed)
        return ItemResult(outcome=ANSWERED, result=result)

    def result(
        self,
        prompt: str,
        answers: list[dict[str, Any]],
        provider: str,
        failed: list[dict[str, str]],
    ) -> dict[str, Any]:
        params = self.ctx.params
        models = [a["model"] for a in answers if a["model"]]
        model = next(s.model for s in self.chain.sources if s.name == provider)
        shown = {"failed_over": failed} if failed else {}  # providers that failed it first
        return {
            "prompt": prompt,
            "provider": provider,
            **shown,
            "model": models[-1] if models else model,
            "brand": params.brand,
            "domain": params.domain,
            "repeats": len(answers),
            "checked_at": answers[-1]["checked_at"] if answers else None,
            **summary(answers, [c.model_dump() for c in params.competitors]),
        }


async def _collect(ctx: JobContext[GeoLookupParams]) -> dict[str, Any]:
    """Store every answered prompt (finished by this claim or an earlier one), then the share
    of voice over them and the other engines' latest answers of the same prompts."""
    counts = {"answered": 0, "cited": 0, "mentioned": 0}
    first_error: tuple[str, str] | None = None
    answered: list[dict[str, Any]] = []
    async for item in ctx.items():
        if item.error_code:
            first_error = first_error or (item.error_code, item.error_message or "")
            continue
        if item.result is None:
            continue
        await ctx.collect(subject(item.result["provider"], item.input), item.result)
        answered.append(item.result)
        counts["answered"] += 1
        counts["cited"] += bool(item.result.get("domain_cited"))
        counts["mentioned"] += bool(item.result.get("brand_mentioned"))
    if not counts["answered"] and first_error is not None:
        raise JobFailed(*first_error)
    if not answered:
        return counts
    rows = answered + await _other_engines(ctx, answered)
    params = ctx.params
    voice = share_of_voice(rows, params.domain, [c.domain for c in params.competitors])
    await ctx.collect(VOICE, voice | {"checked_at": rfc3339(datetime.now(UTC))})
    return {**counts, "share_of_voice": voice["project"]["share"]}


async def _other_engines(
    ctx: JobContext[GeoLookupParams], answered: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The latest published answer of each prompt by each engine this lookup did not ask."""
    found = []
    for row in answered:
        for name in PROVIDERS:
            if name == row["provider"]:
                continue
            other = await ctx.published(subject(name, row["prompt"]))
            if isinstance(other, dict):
                found.append(other)
    return found


def _chain(params: GeoLookupParams, settings: Any) -> Chain[AiSearch]:
    """The provider the params name (an engine's: its configured ones), else every
    configured one in order."""
    names = [name for name in _named(params, settings) if providers.configured(settings, name)]
    if not names:  # gone since created
        raise JobFailed(NOT_CONFIGURED, _missing(settings))
    try:
        return Chain([ADAPTERS[name](settings) for name in names])
    except ProviderError as exc:
        raise JobFailed(exc.code, exc.message) from None


async def run(ctx: JobContext[GeoLookupParams]) -> None:
    chain = _chain(ctx.params, ctx.settings)
    try:
        await ctx.run_items(Lookup(ctx, chain).prompt, concurrency=PROMPTS_AT_ONCE)
    finally:
        await chain.aclose()
    counts = await _collect(ctx)
    ctx.result = {"provider": chain.first.name, "prompts": len(ctx.params.prompts), **counts}
