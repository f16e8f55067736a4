"""Queue throughput and wake-up benchmark: ``python bench/queue.py [--jobs N] [--only ...]``.

What it measures, its targets and how to read its report: docs/bench/queue.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The repository root, not bench/ (where queue.py would shadow the standard library's queue).
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse
import asyncio
import logging
from contextlib import ExitStack

from bench.lib import bare, cli, ours, peer
from bench.lib.jobs import Wake
from bench.lib.queue_report import Results, failures, render
from bench.lib.scratch import (
    ScratchPostgres,
    ScratchSqlite,
    analyze_sqlite,
    pg_url,
    sqlite_checkpoint,
    sqlite_url,
    vacuum_postgres,
)

SELECTABLE = ("sqlite", "postgresql", "procrastinate", "bare")
WAKE_ROUNDS = 5  # PostgreSQL wake-ups: ours and the peer's alternate in this many rounds


Options = argparse.Namespace  # what parse_args returns


def _only(text: str) -> frozenset[str]:
    chosen = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = chosen - set(SELECTABLE)
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"choose from {', '.join(SELECTABLE)} (got {', '.join(sorted(unknown)) or 'none'})"
        )
    return chosen


def parse_args(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        prog="bench/queue.py",
        description=(
            "Burn down no-op jobs with seojobs on SQLite and PostgreSQL, with Procrastinate on "
            "the same PostgreSQL server, and with a bare SQL loop (the ceiling); measure the "
            "wake-up latency of an idle worker."
        ),
    )
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per burn-down")
    parser.add_argument(
        "--only",
        type=_only,
        default=frozenset(SELECTABLE),
        help="comma-separated subset of: sqlite,postgresql,procrastinate,bare (default: all)",
    )
    parser.add_argument(
        "--concurrency",
        type=cli.positive_ints,
        default=(200, 500, 1000),
        help="seojobs worker concurrencies to try; the best is reported (default: 200,500,1000)",
    )
    parser.add_argument(
        "--peer-concurrency",
        type=cli.positive_ints,
        default=(10, 50, 200),
        help="Procrastinate worker concurrencies to try (default: 10,50,200)",
    )
    parser.add_argument(
        "--peer-pool",
        type=int,
        default=None,
        help="Procrastinate connection pool size (default: Procrastinate's own, 4 connections)",
    )
    parser.add_argument("--batch", type=int, default=500, help="bare loop batch (default: 500)")
    parser.add_argument(
        "--samples", type=int, default=50, help="wake-up samples per dialect; 0 skips (default: 50)"
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    chosen = args.only & {"sqlite", "postgresql"}  # bare runs on them, or on both if none
    args.bare = frozenset(
        d for d in ("sqlite", "postgresql") if "bare" in args.only and (d in chosen or not chosen)
    )
    return args


# -- per-dialect fresh databases ------------------------------------------------------------


class SqliteSide:
    def __init__(self, scratch: ScratchSqlite) -> None:
        self.scratch = scratch
        self.template = scratch.new_path("template")
        self.project_id = ours.create_user(sqlite_url(self.template)).project_id
        sqlite_checkpoint(self.template)

    def fresh(self, jobs: int) -> Path:
        path = self.scratch.copy(self.template, "run")
        if jobs:
            ours.insert_jobs(sqlite_url(path), self.project_id, jobs)
            analyze_sqlite(path)
        return path


class PostgresSide:
    def __init__(self, scratch: ScratchPostgres) -> None:
        self.scratch = scratch
        self.template = scratch.create("seojobs_bench_tpl")
        self.project_id = ours.create_user(pg_url(self.template)).project_id

    def fresh(self, jobs: int) -> str:
        name = self.scratch.create("seojobs_bench", template=self.template)
        if jobs:
            ours.insert_jobs(pg_url(name), self.project_id, jobs)
            vacuum_postgres(name, "jobs")
        return name


# -- the runs -------------------------------------------------------------------------------


def run_sqlite(opts: Options, side: SqliteSide, results: Results) -> None:
    if "sqlite" in opts.only:
        for concurrency in opts.concurrency:
            path = side.fresh(opts.jobs)
            burn = asyncio.run(ours.burn(sqlite_url(path), "sqlite", opts.jobs, concurrency))
            side.scratch.remove(path)
            results.burns.append(burn)
            cli.progress(f"seojobs sqlite c={concurrency}: {burn.rate:,.0f} jobs/s")
    if "sqlite" in opts.bare:
        path = side.fresh(opts.jobs)
        burn = bare.burn_sqlite(path, opts.jobs, opts.batch)
        side.scratch.remove(path)
        results.burns.append(burn)
        cli.progress(f"bare loop sqlite: {burn.rate:,.0f} jobs/s")
    if "sqlite" in opts.only and opts.samples:
        for same_db, samples, how in (
            (True, opts.samples, "in-process hook (enqueued via the worker's Database object)"),
            (
                False,
                opts.samples,
                "data_version watch (separate Database object, as another process)",
            ),
        ):
            path = side.fresh(0)
            wake = asyncio.run(
                ours.wake_latency(
                    sqlite_url(path), "sqlite", side.project_id, samples, same_db=same_db, how=how
                )
            )
            side.scratch.remove(path)
            results.wakes.append(wake)
            cli.progress(f"seojobs sqlite wake-up, {how}: median {wake.median * 1000:.1f} ms")


def run_postgres(opts: Options, side: PostgresSide, results: Results) -> None:
    if "postgresql" in opts.only:
        for concurrency in opts.concurrency:
            name = side.fresh(opts.jobs)
            burn = asyncio.run(ours.burn(pg_url(name), "postgresql", opts.jobs, concurrency))
            side.scratch.drop(name)
            results.burns.append(burn)
            cli.progress(f"seojobs postgresql c={concurrency}: {burn.rate:,.0f} jobs/s")
    if "postgresql" in opts.bare:
        name = side.fresh(opts.jobs)
        burn = bare.burn_postgres(name, opts.jobs, opts.batch)
        side.scratch.drop(name)
        results.burns.append(burn)
        cli.progress(f"bare loop postgresql: {burn.rate:,.0f} jobs/s")


def run_peer(opts: Options, scratch: ScratchPostgres, results: Results) -> str:
    """Procrastinate's burn-downs; returns its template database for the wake-ups."""
    template = scratch.create("procrastinate_bench_tpl")
    asyncio.run(peer.prepare_template(template))
    for concurrency in opts.peer_concurrency:
        name = scratch.create("procrastinate_bench", template=template)
        try:
            burn = asyncio.run(peer.burn(name, opts.jobs, concurrency, opts.peer_pool))
        except TimeoutError as exc:
            # The peer too slow at one concurrency on a busy machine: say so, and still
            # measure the others and its wake-up, which our target is compared with.
            results.unfinished.append(f"procrastinate c={concurrency}: {exc}")
            cli.progress(results.unfinished[-1])
            continue
        finally:
            scratch.drop(name)
        results.burns.append(burn)
        cli.progress(f"procrastinate c={concurrency}: {burn.rate:,.0f} jobs/s")
    return template


def _rounds(samples: int) -> list[int]:
    """``samples`` split into WAKE_ROUNDS rounds (none empty)."""
    base, extra = divmod(samples, WAKE_ROUNDS)
    return [n for i in range(WAKE_ROUNDS) if (n := base + (i < extra))]


def run_pg_wakes(
    opts: Options,
    side: PostgresSide | None,
    scratch: ScratchPostgres,
    peer_template: str | None,
    results: Results,
) -> None:
    """Our PostgreSQL wake-up and Procrastinate's, in alternating rounds after every
    burn-down, so that both meet the same load from the rest of the machine."""
    how = "LISTEN/NOTIFY (enqueued via a separate Database object)"
    mine = Wake("seojobs", "postgresql", how) if side is not None else None
    theirs = Wake(f"procrastinate {peer.VERSION}", "postgresql", "LISTEN/NOTIFY")
    for n in _rounds(opts.samples):
        if side is not None and mine is not None:
            name = side.fresh(0)
            url = pg_url(name)
            mine.extend(
                asyncio.run(
                    ours.wake_latency(url, "postgresql", side.project_id, n, same_db=False, how=how)
                )
            )
            side.scratch.drop(name)
        if peer_template is not None:
            name = scratch.create("procrastinate_bench", template=peer_template)
            theirs.extend(asyncio.run(peer.wake_latency(name, n, opts.peer_pool)))
            scratch.drop(name)
    for wake in (mine, theirs if peer_template is not None else None):
        if wake is not None and wake.samples:
            results.wakes.append(wake)
            cli.progress(f"{wake.system} postgresql wake-up: median {wake.median * 1000:.1f} ms")


def _environment(opts: Options, pg: ScratchPostgres | None) -> list[str]:
    lines = [cli.machine(pg)]
    if pg is not None and "procrastinate" in opts.only:
        pool = opts.peer_pool or "its default 4"
        lines.append(f"Procrastinate {peer.VERSION}, pool of {pool} connections")
    lines.append(
        "seojobs: one Worker (poll_interval 1 s, lease 30 s, maintenance off); "
        f"bare loop: one connection, batches of {opts.batch}"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    cli.unwind_on_sigterm()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    opts = parse_args(argv)
    results = Results(jobs=opts.jobs)
    needs_pg = (
        "postgresql" in opts.only or "procrastinate" in opts.only or "postgresql" in opts.bare
    )
    needs_sqlite = "sqlite" in opts.only or "sqlite" in opts.bare
    partial = cli.partial_report(
        lambda: render(results) if results.burns or results.wakes else "",
        "scratch databases dropped",
    )
    with partial, ExitStack() as stack:
        pg = stack.enter_context(ScratchPostgres()) if needs_pg else None
        results.environment = _environment(opts, pg)
        if needs_sqlite:
            scratch_sqlite = stack.enter_context(ScratchSqlite())
            run_sqlite(opts, SqliteSide(scratch_sqlite), results)
        if pg is not None:
            side = None
            if "postgresql" in opts.only or "postgresql" in opts.bare:
                side = PostgresSide(pg)
                run_postgres(opts, side, results)
            peer_template = run_peer(opts, pg, results) if "procrastinate" in opts.only else None
            if opts.samples:
                ours_side = side if "postgresql" in opts.only else None
                run_pg_wakes(opts, ours_side, pg, peer_template, results)
    print(render(results), end="", flush=True)
    return cli.exit_code(failures(results))


if __name__ == "__main__":
    raise SystemExit(main())
