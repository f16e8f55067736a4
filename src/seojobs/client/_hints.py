"""The poll hints a server serves, for both clients: no I/O.

Each job type's hint (``GET /v1/job-types``, ``poll_hint``) is read once per client, the first
time a wait needs a policy it was not given, and kept: a server's kinds do not change while a
client runs. Where no hint is known, a wait uses ``PollPolicy()`` (seed 000's schedule): for a
type the server does not list, for every type when the server is older than hints (no
``poll_hint``, or no ``/v1/job-types`` at all), and for this one wait when the read failed for a
passing reason (a lost connection, a 5xx or a 429: the next wait asks again).
"""

from __future__ import annotations

import httpx
from pydantic import ValidationError

from seojobs.client import errors
from seojobs.client.models import JobType, PollHint
from seojobs.client.policy import PollPolicy

PASSING = (errors.TransportError, errors.ServerError, errors.RateLimitedError)


class Hints:
    def __init__(self) -> None:
        self._served: dict[str, PollHint] | None = None

    @property
    def known(self) -> bool:
        """Has the server been asked (and answered, or refused for good)?"""
        return self._served is not None

    def policy(self, job_type: str) -> PollPolicy:
        """The policy of ``job_type``'s hint; ``PollPolicy()`` where none is known."""
        hint = (self._served or {}).get(job_type.replace("-", "_"))
        return PollPolicy.from_hint(hint)

    def learn(self, response: httpx.Response) -> None:
        """Keep the hints of a ``/v1/job-types`` answer; a type whose entry does not parse is
        left to the default rather than failing a wait."""
        served: dict[str, PollHint] = {}
        try:
            listed = response.json()["data"]
        except (ValueError, KeyError, TypeError):
            listed = []
        for entry in listed if isinstance(listed, list) else []:
            try:
                found = JobType.model_validate(entry)
            except ValidationError:
                continue
            if found.poll_hint is not None:
                served[found.name] = found.poll_hint
        self._served = served

    def failed(self, exc: errors.SeojobsError) -> None:
        """The read failed: for good (an older server's 404, ...) unless the reason passes."""
        if not isinstance(exc, PASSING):
            self._served = {}
