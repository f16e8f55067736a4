"""A job's ``webhook_url`` (issue 27.3), checked against the address policy before the job
is made; for the synchronous handlers, which run in the thread pool."""

from __future__ import annotations

from anyio import from_thread

from seojobs.services import Services


def check_webhook_url(svc: Services, url: str | None) -> None:
    """Raises the services' ``Invalid`` (a 422 naming ``webhook_url``) for a URL the server
    may not deliver to; sends nothing."""
    if url is not None:
        from_thread.run(svc.webhooks.check_url, url, "webhook_url")
