"""What this process did, counted for Prometheus (issue 26.3): HTTP requests, provider calls,
rate-limit refusals, database and Redis outages, claims, lease rescues and job durations.

Per process, by design: every API process serves its own on ``GET /metrics`` (beside the
queue's gauges, which are read from the database and the same in all of them) and every
``seojobs worker --metrics-port`` on its own port. Prometheus scrapes each process as a
target of its own and ``sum by (...)`` adds them up; no shared directory between processes
(Prometheus' multiprocess mode) to configure, clean at restart or lose under a container.

Labels take bounded values only: route templates (never raw paths), provider names, job
types, outcomes; never a user, URL or job id.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry(auto_describe=True)

# Seconds: from a status poll (milliseconds) to a large submission or export.
_HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Seconds: a provider call, retries' waits excluded (each attempt is one observation).
_PROVIDER_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Seconds: a job, from a no-op to an audit of a large site.
_JOB_BUCKETS = (0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 14400.0)

HTTP_REQUESTS = Counter(
    "seojobs_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
    registry=REGISTRY,
)
HTTP_DURATION = Histogram(
    "seojobs_http_request_duration_seconds",
    "Time to answer an HTTP request (to its last byte), by method and route template.",
    ["method", "route"],
    buckets=_HTTP_BUCKETS,
    registry=REGISTRY,
)
PROVIDER_CALLS = Counter(
    "seojobs_provider_calls",
    "Calls to provider APIs (each attempt, retries included), by provider and outcome "
    "(ok, or the error code).",
    ["provider", "outcome"],
    registry=REGISTRY,
)
PROVIDER_DURATION = Histogram(
    "seojobs_provider_call_duration_seconds",
    "Time of one provider call attempt, by provider.",
    ["provider"],
    buckets=_PROVIDER_BUCKETS,
    registry=REGISTRY,
)
RATE_LIMITED = Counter(
    "seojobs_rate_limit_rejections",
    "Requests refused with 429, by policy (user: a user's budget; auth: failed "
    "authentications per address).",
    ["policy"],
    registry=REGISTRY,
)
RATE_LIMIT_STORAGE_ERRORS = Counter(
    "seojobs_rate_limit_storage_errors",
    "Requests that found the rate limiter's storage failing (or skipped after a failure), "
    "by what they got: served unlimited (open) or refused with 503 (closed).",
    ["policy"],
    registry=REGISTRY,
)
RATE_LIMIT_STORAGE_OUTAGES = Counter(
    "seojobs_rate_limit_storage_outages",
    "Times the rate limiter's storage went from answering to failing.",
    registry=REGISTRY,
)
DATABASE_OUTAGES = Counter(
    "seojobs_database_outages",
    "Times the API found the database not answering (it then answers 503 until it does).",
    registry=REGISTRY,
)
DATABASE_UNAVAILABLE = Counter(
    "seojobs_database_unavailable_responses",
    "Requests answered 503 at once because the database does not answer.",
    registry=REGISTRY,
)
CLAIMS = Counter(
    "seojobs_jobs_claimed", "Jobs this worker claimed, by type.", ["type"], registry=REGISTRY
)
RESCUES = Counter(
    "seojobs_lease_rescues",
    "Jobs whose lease ran out, found by maintenance: handed to another worker (resumed) or "
    "failed after too many rescues (failed).",
    ["outcome"],
    registry=REGISTRY,
)


class BatchHistogram(Collector):
    """A histogram fed a batch of observations at a time: ``seojobs_job_duration_seconds``.
    A worker of short jobs finishes thousands a second, and prometheus_client's
    ``Histogram.observe`` (two locks and a bucket walk) per job was a cost of its hot path
    (bench/queue.py, profiled). The worker keeps each job's time in a list and hands the list
    over when it writes the batch of completions (``add``: one lock per batch); scrapes see
    the same series, buckets, sum and count as a ``Histogram``'s."""

    def __init__(
        self, name: str, documentation: str, labels: Sequence[str], buckets: Sequence[float]
    ):
        self.name = name
        self.documentation = documentation
        self.labels = tuple(labels)
        self.bounds = tuple(sorted(buckets))
        self._lock = threading.Lock()
        # label values -> (counts per bucket, the last for +Inf; the sum)
        self._series: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}

    def add(self, observations: Iterable[tuple[tuple[str, ...], float]]) -> None:
        """Count ``(label values, value)`` pairs."""
        bounds = self.bounds
        folded: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}
        for key, value in observations:
            found = folded.get(key)
            if found is None:
                found = folded[key] = ([0] * (len(bounds) + 1), [0.0])
            found[0][bisect.bisect_left(bounds, value)] += 1
            found[1][0] += value
        with self._lock:
            for key, (counts, total) in folded.items():
                series = self._series.setdefault(key, ([0] * (len(bounds) + 1), [0.0]))
                for i, n in enumerate(counts):
                    series[0][i] += n
                series[1][0] += total[0]

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labels)
        with self._lock:
            series = [
                (key, list(counts), total[0]) for key, (counts, total) in self._series.items()
            ]
        for key, counts, total in sorted(series):
            cumulative = list(itertools.accumulate(counts))
            les = [repr(float(b)) for b in self.bounds] + ["+Inf"]
            family.add_metric(list(key), list(zip(les, cumulative, strict=True)), total)
        yield family


JOB_DURATION = BatchHistogram(
    "seojobs_job_duration_seconds",
    "Time a worker ran a job (one run; a rescued job's runs are separate), by type and outcome.",
    ["type", "outcome"],
    _JOB_BUCKETS,
)
REGISTRY.register(JOB_DURATION)


class provider_call:
    """Count and time one attempt of a provider call; its outcome is ``ok`` or the error's
    ``code`` (``ProviderError``), else the exception's class name. Used as a function (``with
    provider_call(name):``); a class, not a generator context manager: an index check makes
    one provider call per URL."""

    __slots__ = ("_provider", "_started")

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        outcome = "ok" if exc is None else str(getattr(exc, "code", None) or type(exc).__name__)
        duration, calls = _provider_series(self._provider, outcome)
        duration.observe(time.perf_counter() - self._started)
        calls.inc()


# Each (provider, outcome)'s histogram and counter, looked up once: labels() locks and checks
# every call, and an index check makes one provider call per URL. Outcomes are bounded (ok,
# the error codes, exception class names).
_PROVIDER_SERIES: dict[tuple[str, str], tuple[Any, Any]] = {}


def _provider_series(provider: str, outcome: str) -> tuple[Any, Any]:
    found = _PROVIDER_SERIES.get((provider, outcome))
    if found is None:
        found = (PROVIDER_DURATION.labels(provider), PROVIDER_CALLS.labels(provider, outcome))
        _PROVIDER_SERIES[(provider, outcome)] = found
    return found


def serve_worker_metrics(host: str, port: int) -> None:
    """``seojobs worker --metrics-port``: this process's counters and its CPU, memory and
    files on ``http://host:port/metrics``, from a daemon thread (prometheus_client's own
    server). The queue's gauges are the API's (``GET /metrics``)."""
    from prometheus_client import start_http_server
    from prometheus_client.platform_collector import PlatformCollector
    from prometheus_client.process_collector import ProcessCollector

    registry = CollectorRegistry(auto_describe=True)
    registry.register(Forward())
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    start_http_server(port, addr=host, registry=registry)


class Forward(Collector):
    """This module's metrics, for another registry to serve (the API's, the worker's)."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()
