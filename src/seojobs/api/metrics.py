"""``GET /metrics``: the queue and the process in Prometheus' text format, for an operator.

Read from the database at each scrape, so every API process answers the same about the queue
however many run: jobs by type and state, the age of the oldest due job (the queue's lag),
leases that ran out, the workers holding jobs, the schedules that are on. The process's own CPU,
memory and file descriptors come from ``prometheus_client``'s collectors (per process).

These figures cover every user (issue 25, "Also"): with ``SEOJOBS_METRICS_TOKEN`` set they are
behind ``Authorization: Bearer <token>`` for every client; unset, only a loopback client that
came directly (no ``Forwarded`` / ``X-Forwarded-For``: a reverse proxy on the same host relays
the outside world) is answered, and everyone else gets 403 naming the setting.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import APIRouter, FastAPI, Header, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from seojobs import telemetry
from seojobs.api.inputs import CheckedRoute
from seojobs.api.problems import Problem
from seojobs.api.shared import add_routes
from seojobs.records import JOB_STATES, QueueSnapshot
from seojobs.services import Services


class QueueCollector(Collector):
    """The queue's gauges, from one snapshot per scrape."""

    def __init__(self, snapshot: Callable[[], QueueSnapshot], kinds: list[str]) -> None:
        self._snapshot = snapshot
        # Every registered type in every state, 0 included: a rule on the failed jobs of a
        # type needs its series before the first one fails.
        self._zeros = {(kind, state): 0 for kind in kinds for state in JOB_STATES}

    def collect(self) -> Iterator[Metric]:
        found = self._snapshot()
        jobs = GaugeMetricFamily(
            "seojobs_jobs", "Jobs in the database, by type and state.", labels=["type", "state"]
        )
        counts = dict(self._zeros)
        counts.update({(kind, state): count for kind, state, count in found.jobs})
        for (kind, state), count in sorted(counts.items()):
            jobs.add_metric([kind, state], count)
        yield jobs
        yield GaugeMetricFamily(
            "seojobs_queue_oldest_due_seconds",
            "How long the oldest pending job that is due has waited (0: none waiting).",
            value=_age(found),
        )
        yield GaugeMetricFamily(
            "seojobs_expired_leases",
            "Processing jobs whose lease ran out: their worker died or hangs; maintenance "
            "hands them to another worker.",
            value=found.expired_leases,
        )
        yield GaugeMetricFamily(
            "seojobs_workers_busy", "Workers holding at least one job.", value=found.workers
        )
        yield GaugeMetricFamily(
            "seojobs_schedules_enabled",
            "Collection schedules that are on.",
            value=found.schedules_enabled,
        )


def _age(found: QueueSnapshot) -> float:
    if found.oldest_due is None:
        return 0.0
    return max(0.0, (found.at - found.oldest_due).total_seconds())


def registry_for(services: Services) -> CollectorRegistry:
    """A registry of this app's own (several apps in one process keep apart)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector(services.queue_snapshot, services.registry.names()))
    registry.register(telemetry.Forward())  # what this process counted
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return registry


router = APIRouter(route_class=CheckedRoute)


@router.get(
    "/metrics",
    operation_id="metrics",
    tags=["health"],
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Metrics"}},
)
def metrics(request: Request, authorization: Annotated[str | None, Header()] = None) -> Response:
    """The queue and this process in Prometheus' text format (see the README). Without
    `SEOJOBS_METRICS_TOKEN`, loopback clients only; with it, a bearer token."""
    registry, token = request.app.state.metrics
    if token is None and not loopback_client(request):
        raise Problem(
            403,
            "Forbidden",
            "GET /metrics answers loopback clients only; to scrape it from elsewhere, set "
            "SEOJOBS_METRICS_TOKEN and send `Authorization: Bearer <token>`",
            code="metrics_loopback_only",
        )
    if token is not None:
        expected = f"Bearer {token.get_secret_value()}".encode()
        if not hmac.compare_digest((authorization or "").encode(), expected):
            raise Problem(
                401,
                "Unauthorized",
                "GET /metrics needs `Authorization: Bearer <SEOJOBS_METRICS_TOKEN>`",
                code="unauthorized",
                headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
            )
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def install(app: FastAPI, services: Services) -> None:
    """Serve ``/metrics`` (the route every app shares, ``seojobs.api.shared``) from this
    app's own registry and token."""
    app.state.metrics = (registry_for(services), services.settings.metrics_token)
    add_routes(app, router)


def loopback_client(request: Request) -> bool:
    """The request came straight from this host: a loopback peer (after a trusted proxy's
    forwarded address replaced it) that no proxy relayed."""
    if "forwarded" in request.headers or "x-forwarded-for" in request.headers:
        return False
    host = request.client.host if request.client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a Unix socket peer or a name: not known to be this host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback
