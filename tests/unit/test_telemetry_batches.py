"""The job-duration histogram is fed a batch at a time (issue 23.6); a scrape reads what
prometheus_client's own Histogram would show for the same observations."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from seojobs.telemetry import BatchHistogram

BUCKETS = (0.1, 0.5, 1.0, 5.0, 14400.0)
VALUES = [
    (("a", "completed"), 0.05),
    (("a", "completed"), 0.1),  # on a bound: counted in that bucket (le)
    (("a", "completed"), 3.0),
    (("b", "failed"), 20000.0),  # past the last bound: +Inf only
    (("a", "failed"), 0.5),
]


def _exposed(collector: object) -> list[str]:
    registry = CollectorRegistry()
    registry.register(collector)  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    return sorted(line for line in text.splitlines() if line and "_created" not in line)


def test_batches_expose_what_one_observation_at_a_time_would() -> None:
    batched = BatchHistogram("t_seconds", "Doc.", ["type", "outcome"], BUCKETS)
    batched.add(VALUES[:2])
    batched.add([])
    batched.add(VALUES[2:])
    registry = CollectorRegistry()
    single = Histogram("t_seconds", "Doc.", ["type", "outcome"], buckets=BUCKETS, registry=registry)
    for labels, value in VALUES:
        single.labels(*labels).observe(value)
    text = generate_latest(registry).decode()
    expected = sorted(line for line in text.splitlines() if line and "_created" not in line)
    assert _exposed(batched) == expected
