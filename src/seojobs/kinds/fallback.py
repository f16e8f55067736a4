"""Provider fallback (issue 29.6): where several providers are configured for a role, an item
a provider fails for a reason that is not the item's own goes to the next one in order.

Not the item's own: a transport error, 429 or 5xx after the bounded retries
(``upstream_error``), a refused key (``provider_auth_failed``) or the provider's quota spent
(``provider_quota_exhausted``). The item's own (``provider_rejected``, ``malformed_response``)
fails the item as before: another provider would be asked the same thing. A provider that
failed fatally (key, quota) is not asked again in the same job, and later items name it with
that failure. What answered and what failed before it are told with the answer, so a result
names both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from seojobs.providers.base import AUTH_FAILED, QUOTA_EXHAUSTED, UPSTREAM_ERROR, ProviderError

HANDED_OVER = frozenset({UPSTREAM_ERROR, AUTH_FAILED, QUOTA_EXHAUSTED})


class Named(Protocol):
    name: str


S = TypeVar("S", bound=Named)
T = TypeVar("T")


def hands_over(exc: ProviderError) -> bool:
    """Whether the next provider may answer what ``exc`` failed."""
    return exc.fatal or exc.code in HANDED_OVER


@dataclass
class Answered(Generic[T]):
    value: T
    provider: str  # the one that answered
    failed: list[dict[str, str]]  # those that failed first, in order: provider, code, message


@dataclass
class Unanswered(Exception):
    """No provider answered: ``error`` is the last failure; ``fatal`` when every provider
    is down for the rest of the job (no other item can succeed either)."""

    error: ProviderError
    failed: list[dict[str, str]]
    fatal: bool = False


@dataclass
class Chain(Generic[S]):
    """A job's providers for one role, in the order tried."""

    sources: Sequence[S]
    down: dict[str, ProviderError] = field(default_factory=dict)

    @property
    def first(self) -> S:
        return self.sources[0]

    async def ask(self, call: Callable[[S], Awaitable[T]]) -> Answered[T]:
        """``call`` with each provider not down, until one answers. ``Unanswered`` when none
        does, or when one failed for the item's own reason."""
        failed: list[dict[str, str]] = []
        last: ProviderError | None = None
        for source in self.sources:
            if source.name in self.down:  # named still: it failed this item too
                gone = self.down[source.name]
                failed.append({"provider": source.name, "code": gone.code, "message": gone.message})
                continue
            try:
                return Answered(await call(source), source.name, failed)
            except ProviderError as exc:
                failed.append({"provider": source.name, "code": exc.code, "message": exc.message})
                if not hands_over(exc):
                    raise Unanswered(exc, failed) from None
                if exc.fatal:
                    self.down[source.name] = exc
                last = exc
        if last is None:  # every provider was down before this item
            last = next(iter(self.down.values()))
        raise Unanswered(last, failed, fatal=self.all_down)

    @property
    def all_down(self) -> bool:
        """Whether every provider failed fatally (``down`` may be shared with a wider chain)."""
        return all(source.name in self.down for source in self.sources)

    async def aclose(self) -> None:
        for source in self.sources:
            closing: Any = getattr(source, "aclose", None)
            if closing is not None:
                await closing()
