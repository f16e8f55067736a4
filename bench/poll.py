"""Polling benchmark: ``python bench/poll.py [--jobs 1000] [--span 600] [--seed 1]``.

What it measures, its targets and how to read its report: docs/bench/poll.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The repository root, not bench/ (where queue.py would shadow the standard library's queue).
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse
import time

import httpx

from bench.lib.cli import verdict
from bench.lib.pollsim import Figures, SimClock, World, figures, seed000
from seojobs.client import Client
from seojobs.client.models import Job
from seojobs.client.scheduler import Scheduler

LIMIT, WINDOW = 120, 60.0
TARGET_SHARE = 0.05  # at most 5 % of seed 000's requests
TARGET_MEDIAN = 15.0  # seconds


def run_ours(world: World) -> tuple[dict[int, float], Scheduler]:
    """Our Scheduler with its defaults, over the real Client, on the simulated clock."""
    sim = SimClock()
    client = Client(
        "http://sim.invalid",
        "bench-key",
        transport=httpx.MockTransport(world.handler(sim)),
        sleep=sim.sleep,
        clock=sim.clock,
    )
    known: dict[int, float] = {}

    def done(job: Job) -> None:
        known.setdefault(job.job_id, sim.now)

    with client:
        scheduler = Scheduler(client, on_done=done)
        for job_id in world.finish:
            scheduler.add("index_check", job_id)
        scheduler.run()
    return known, scheduler


def row(f: Figures) -> str:
    return (
        f"{f.name:<40} {f.requests:>8,} {f.per_job:>7.2f} {f.refused:>6,} {f.busiest_minute:>8,}"
        f" {f.median_delay:>8.1f} {f.p90_delay:>8.1f} {f.last_known:>9.0f} {f.unknown:>6}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--span", type=float, default=600.0, help="finish times: U(0, span) s")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    def world(limited: bool) -> World:
        return World.make(args.jobs, args.span, args.seed, LIMIT if limited else None, WINDOW)

    began = time.perf_counter()
    results: list[Figures] = []
    free = world(False)
    results.append(figures("seed 000 poller, unlimited server", free, seed000(free)[0]))
    variant = world(False)
    known, _ = seed000(variant, grow_first=False)
    results.append(figures("  variant: sleep 15 s before growing", variant, known))
    limited = world(True)
    known, timed_out = seed000(limited)
    results.append(figures("seed 000 poller, 120/min limit", limited, known))
    ours_world = world(True)
    ours_known, scheduler = run_ours(ours_world)
    ours = figures("our Scheduler, 120/min limit", ours_world, ours_known)
    results.append(ours)
    took = time.perf_counter() - began

    print(
        f"bench/poll.py: {args.jobs:,} jobs created at t=0, finishing at U(0, {args.span:.0f}) s "
        f"(seed {args.seed}); limit {LIMIT} requests per {WINDOW:.0f} s (moving window)"
    )
    print(f"simulated, no network; took {took:.1f} s of real time\n")
    print(
        f"{'':<40} {'requests':>8} {'req/job':>7} {'429s':>6} {'busiest':>8}"
        f" {'median':>8} {'p90':>8} {'all known':>9} {'missed':>6}"
    )
    print(
        f"{'':<40} {'':>8} {'':>7} {'':>6} {'minute':>8}"
        f" {'delay s':>8} {'delay s':>8} {'at s':>9} {'':>6}"
    )
    for result in results:
        print(row(result))
    reference, _variant, seed_limited, _ours = results
    stats = scheduler.stats
    print(
        f"\nour Scheduler: {stats.requests} batched reads in {stats.rounds} rounds, "
        f"{stats.rate_limited} 429s, period {scheduler.min_period:.0f}-"
        f"{scheduler.max_period:.0f} s, share {scheduler.initial_share:.0%} of the budget"
    )
    if timed_out:
        print(f"seed 000 under the limit: {timed_out} loops hit their 24 h deadline")

    vs_reference = ours.requests / reference.requests
    vs_limited = ours.requests / seed_limited.requests
    print(
        f"\nours / seed 000 requests: {vs_reference:.1%} of the unlimited reference, "
        f"{vs_limited:.1%} of the rate-limited run"
    )
    checks = [
        (
            f"requests <= {TARGET_SHARE:.0%} of seed 000's ({ours.requests} vs "
            f"{TARGET_SHARE * reference.requests:.0f})",
            ours.requests <= TARGET_SHARE * reference.requests,
        ),
        (f"no 429s ({ours.refused})", ours.refused == 0),
        (
            f"median detection delay <= {TARGET_MEDIAN:.0f} s ({ours.median_delay:.1f} s)",
            ours.median_delay <= TARGET_MEDIAN,
        ),
        (f"every job seen finished ({ours.jobs - ours.unknown}/{ours.jobs})", not ours.unknown),
    ]
    for text, ok in checks:
        print(f"  {verdict(ok)}  {text}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
