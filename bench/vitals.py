"""Web-vitals benchmark: ``python bench/vitals.py [--pages N] [--concurrency N] [--store pg]``.

What it measures, its targets and how to read its report: docs/bench/vitals.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The repository root, not bench/ (where queue.py would shadow the standard library's queue).
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack

from bench.lib import cli, procstat
from bench.lib.ours import Databases
from bench.lib.vitals_runs import VitalsRun, become_subreaper, cli_loop, ours
from bench.lib.vitalsite import serving
from seojobs.kinds.web_vitals import WebVitalsSettings

SPEED_FACTOR = 2.0  # ours >= 2 x the CLI loop's pages per minute
SCORE_POINTS = 5  # every page's score within 5 points of the CLI's
SYSTEMS = ("ours", "cli")


Options = argparse.Namespace  # what parse_args returns


def parse_args(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        prog="bench/vitals.py",
        description="Lighthouse (mobile) over local pages: a seojobs web_vitals job against "
        "the Lighthouse CLI run once per URL one after another.",
    )
    parser.add_argument("--pages", type=int, default=20, help="pages (default 20, a job's max)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=2,
        help="SEOJOBS_WEB_VITALS_CONCURRENCY for our worker (default 2: one run per core; "
        f"the kind's own default is {WebVitalsSettings().concurrency})",
    )
    parser.add_argument("--store", choices=("sqlite", "pg"), default="sqlite", help="our store")
    parser.add_argument(
        "--only",
        type=cli.choice(SYSTEMS),
        default=SYSTEMS,
        help="comma-separated subset of ours,cli (default: both, ours first)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.pages <= 20 or not 1 <= args.concurrency <= 8:
        parser.error("--pages must be 1..20 (a job's URLs) and --concurrency 1..8")
    return args


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}" if values else "-"


COLUMNS: list[tuple[str, Callable[[VitalsRun], str]]] = [
    ("system", lambda run: run.label),
    ("pages", lambda run: str(len(run.scores))),
    ("seconds", lambda run: f"{run.seconds:.1f}"),
    ("pages/min", lambda run: f"{run.pages_per_minute:.2f}"),
    ("s/page", lambda run: f"{run.seconds / max(len(run.scores), 1):.1f}"),
    ("CPU s", lambda run: f"{run.cpu:.0f}"),
    ("cores busy", lambda run: f"{run.cpu / run.seconds:.2f}"),
    ("peak PSS", lambda run: f"{run.peak_rss / 1e6:,.0f} MB"),
    ("LH total s (median)", lambda run: _median(run.lighthouse_seconds)),
    ("run wall s (median)", lambda run: _median(run.run_seconds)),
]


def render(runs: list[VitalsRun], urls: list[str], environment: list[str]) -> list[str]:
    lines = ["", *environment, ""]
    lines += cli.columns(COLUMNS, runs)
    for run in runs:
        lines += [f"  {run.label}: error {e}" for e in run.errors]
    if len(runs) == 2:
        ours_run, peer = runs
        lines += ["", *cli.table(["page", "ours", "CLI", "diff"], _score_rows(urls, runs))]
        ratio = ours_run.pages_per_minute / peer.pages_per_minute
        lines += [
            "",
            f"  pages/min ratio (ours / CLI): {ratio:.2f}",
            "",
            *cli.judged(targets(runs, urls)),
        ]
    return lines


def _diffs(urls: list[str], runs: list[VitalsRun]) -> list[int]:
    ours_run, peer = runs
    return [
        abs(ours_run.scores[u] - peer.scores[u])
        for u in urls
        if u in ours_run.scores and u in peer.scores
    ]


def _score_rows(urls: list[str], runs: list[VitalsRun]) -> list[list[str]]:
    rows = []
    for url in urls:
        got = [run.scores.get(url) for run in runs]
        diff = f"{got[0] - got[1]:+d}" if None not in got else "-"  # type: ignore[operator]
        rows.append([url.split("/", 3)[3], *("-" if g is None else str(g) for g in got), diff])
    return rows


def targets(runs: list[VitalsRun], urls: list[str]) -> list[cli.Target]:
    """Judged when both systems ran."""
    if len(runs) != 2:
        return []
    ours_run, peer = runs
    ratio = ours_run.pages_per_minute / peer.pages_per_minute
    worst = max(_diffs(urls, runs), default=None)
    complete = len(ours_run.scores) == len(peer.scores) == len(urls)
    worst_text = "-" if worst is None else f"{worst} points"
    return [
        (
            f"ours >= {SPEED_FACTOR:g} x the CLI loop's pages/min",
            f"{ratio:.2f}x",
            ratio >= SPEED_FACTOR,
        ),
        (
            f"every page's score within {SCORE_POINTS} points of the CLI's",
            f"worst {worst_text}" + ("" if complete else ", pages missing"),
            complete and worst is not None and worst <= SCORE_POINTS,
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    cli.unwind_on_sigterm()
    opts = parse_args(argv)
    become_subreaper()  # the CLI loop's orphaned Chromium processes are reaped (and counted) here
    runs: list[VitalsRun] = []
    started, busy_before = time.monotonic(), procstat.machine_busy()
    environment = [
        cli.machine() + f"; load average at start {procstat.loadavg()}",
        f"pages: {opts.pages} (bench/lib/vitalsite.py), Lighthouse mobile form factor, "
        f"simulated throttling; ours: {opts.store}, SEOJOBS_WEB_VITALS_CONCURRENCY="
        f"{opts.concurrency}",
    ]
    partial = cli.partial_report(
        lambda: "\n".join(render(runs, [], environment)) + "\n",
        "processes stopped, scratch databases removed",
    )
    with partial, ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="seojobs_vitals_")))
        urls, hits = stack.enter_context(serving(opts.pages))
        dbs = Databases(
            stack,
            sqlite=opts.store == "sqlite",
            postgres=opts.store == "pg",
            prefix="seojobs_vitals",
        )
        if "ours" in opts.only:
            with dbs.fresh(opts.store) as (db_url, user_id):
                runs.append(ours(db_url, user_id, urls, opts.concurrency, tmp))
            cli.progress(f"ours: {runs[-1].pages_per_minute:.2f} pages/min")
        if "cli" in opts.only:
            runs.append(cli_loop(urls, tmp))
            cli.progress(f"CLI loop: {runs[-1].pages_per_minute:.2f} pages/min")
    wall = time.monotonic() - started
    machine = (procstat.machine_busy() - busy_before) / wall
    environment.append(
        f"total wall time {wall:.0f} s; the whole machine's CPUs busy {machine:.2f} on average; "
        f"load average at end {procstat.loadavg()}; site requests {sum(hits.values())}"
    )
    lines = render(runs, urls, environment)
    print("\n".join(lines), flush=True)
    return cli.exit_code(cli.failed(targets(runs, urls)))


if __name__ == "__main__":
    raise SystemExit(main())
