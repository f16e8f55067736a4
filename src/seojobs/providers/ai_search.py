"""What AI-search adapters share: one answer's shape, the protocol, the error mapping.

An adapter asks one prompt (``ask``) and returns an :class:`Answer`: the text, the cited
sources in the order the answer cites them, and the model that answered. Whole-call failures
raise :class:`~seojobs.providers.base.ProviderError`: ``provider_auth_failed`` (401/403, fatal),
``provider_quota_exhausted`` (the account's credit is spent, fatal), ``provider_rejected``
(400/404/422: a model or field the provider refuses, fatal: every prompt would be refused),
``upstream_error`` (429/5xx/transport once the bounded retries are spent) and
``malformed_response`` (an answer not of the documented shape).

Keys are secrets: they travel in the ``Authorization`` header only, and any echo of one in a
provider's error text (OpenAI quotes a masked key) is cut out before it reaches a job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from seojobs.fetch.http import Response
from seojobs.providers.base import (
    QUOTA_EXHAUSTED,
    REJECTED,
    ProviderError,
    error_for_status,
    malformed,
)


@dataclass(frozen=True)
class Citation:
    """A cited source. ``site``: the source's host when ``url`` does not show it (Gemini cites
    through redirect URLs and names the site in the title)."""

    url: str
    title: str | None = None
    site: str | None = None


@dataclass(frozen=True)
class Answer:
    text: str
    citations: tuple[Citation, ...] = field(default=())
    model: str | None = None


class AiSearch(Protocol):
    name: str
    model: str

    async def ask(self, prompt: str) -> Answer: ...

    async def aclose(self) -> None: ...


def status_error(response: Response, provider: str) -> ProviderError | None:
    """The error of a non-2xx answer (``base.with_retries`` clears keys from it). Spent
    credit (OpenAI's 429 ``insufficient_quota``) is not worth a retry; a refused request (a
    model the account cannot use) would be refused for every prompt: both end the job."""
    error = error_for_status(response, provider)
    if error is None:
        return None
    if response.status == 429 and "insufficient_quota" in response.text:
        return ProviderError(
            QUOTA_EXHAUSTED,
            f"{provider} has no credit left (429 insufficient_quota)",
            status=429,
            fatal=True,
        )
    if error.code == REJECTED:
        error.fatal = True
    return error


def json_object(response: Response, provider: str) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        raise malformed(provider, "the body is not JSON") from None
    if not isinstance(body, dict):
        raise malformed(provider, "the body is not a JSON object")
    return body


def text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
