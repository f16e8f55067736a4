"""Provider fallback's rules (seojobs.kinds.fallback): which failures hand an item over."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from seojobs.kinds.fallback import Chain, Unanswered
from seojobs.providers.base import (
    AUTH_FAILED,
    MALFORMED_RESPONSE,
    QUOTA_EXHAUSTED,
    REJECTED,
    UPSTREAM_ERROR,
    ProviderError,
)


@dataclass
class Source:
    name: str
    error: ProviderError | None = None
    asked: int = 0

    async def answer(self) -> str:
        self.asked += 1
        if self.error is not None:
            raise self.error
        return f"from {self.name}"


def ask(chain: Chain[Source]) -> str:
    return asyncio.run(chain.ask(lambda s: s.answer())).value


def test_an_upstream_failure_hands_over_and_names_the_failed() -> None:
    chain = Chain([Source("a", ProviderError(UPSTREAM_ERROR, "503")), Source("b")])
    answered = asyncio.run(chain.ask(lambda s: s.answer()))
    assert (answered.value, answered.provider) == ("from b", "b")
    assert answered.failed == [{"provider": "a", "code": UPSTREAM_ERROR, "message": "503"}]


@pytest.mark.parametrize("code", [REJECTED, MALFORMED_RESPONSE])
def test_the_items_own_failure_is_not_handed_over(code: str) -> None:
    second = Source("b")
    chain = Chain([Source("a", ProviderError(code, "no")), second])
    with pytest.raises(Unanswered) as none:
        ask(chain)
    assert (none.value.error.code, none.value.fatal, second.asked) == (code, False, 0)


@pytest.mark.parametrize("code", [AUTH_FAILED, QUOTA_EXHAUSTED])
def test_a_refused_key_or_spent_quota_is_asked_once_and_every_provider_down_is_fatal(
    code: str,
) -> None:
    first = Source("a", ProviderError(code, "401", fatal=True))
    chain = Chain([first, Source("b")])
    assert ask(chain) == ask(chain) == "from b"
    assert first.asked == 1
    alone = Chain([Source("a", ProviderError(code, "401", fatal=True))])
    with pytest.raises(Unanswered) as none:
        ask(alone)
    assert none.value.fatal
