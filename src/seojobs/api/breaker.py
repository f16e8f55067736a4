"""A circuit breaker for the rate limiter's storage, and the log lines of its outages.

After a failure the storage is skipped for ``cooldown`` seconds: every request in that time
gets the storage-error policy at once instead of each waiting out its own timeout against a
server that is down or hung. When the cool-down is over, one request tries the storage (the
others keep skipping it while that try runs): success closes the breaker, failure opens it for
another cool-down.

An outage is logged twice, whatever its length or traffic: one warning when it starts and one
line when the storage answers again (before, each request logged a traceback: 585 KB for 150
requests). Hand-written rather than taken from a library: pybreaker's async support is
Tornado's, and what is needed here is four methods.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from seojobs import telemetry

log = logging.getLogger("seojobs.ratelimit")


class Breaker:
    def __init__(
        self, cooldown: float, policy: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.cooldown = cooldown
        self.policy = policy  # named in the log lines: what requests get meanwhile
        self.clock = clock
        self.skipped = 0  # requests that did not try the storage during this outage
        self._down_since: float | None = None
        self._open_until = 0.0
        self._trying = False

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def allow(self) -> bool:
        """May this request try the storage? If True, report how it went (exactly once)."""
        if self._down_since is None:
            return True
        if self._trying or self.clock() < self._open_until:
            self.skipped += 1
            return False
        self._trying = True  # the one request that finds out whether the storage is back
        return True

    def succeeded(self) -> None:
        self._trying = False
        if self._down_since is None:
            return
        log.warning(
            "rate-limit storage answers again after %.1f s down; %d requests had the %r policy",
            self.clock() - self._down_since,
            self.skipped,
            self.policy,
        )
        self._down_since = None
        self.skipped = 0

    def failed(self, error: BaseException) -> None:
        self._trying = False
        now = self.clock()
        self._open_until = now + self.cooldown
        if self._down_since is not None:
            return  # the same outage: already said
        self._down_since = now
        telemetry.RATE_LIMIT_STORAGE_OUTAGES.inc()
        log.warning(
            "rate-limit storage unavailable (%s: %s); requests get the %r policy until it "
            "answers, retried every %.1f s",
            type(error).__name__,
            str(error) or "no answer within the timeout",
            self.policy,
            self.cooldown,
        )

    def abandoned(self) -> None:
        """The try was cancelled (its client went away) before it told anything."""
        self._trying = False

    def retry_in(self) -> float:
        """Seconds until the storage is tried again (0 when it is up)."""
        if self._down_since is None:
            return 0.0
        return max(0.0, self._open_until - self.clock())
