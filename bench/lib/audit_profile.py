"""``bench/audit.py --profile``: where the worker's CPU goes during one audit.

py-spy samples the worker process (``record --gil --format raw``: only the thread holding the
GIL, so each sample is a moment of Python work; SQLite's C code and socket waits release the
GIL and are not sampled). Each sample counts for the first category whose pattern is found in
its stack (exclusive: the rows add up to 100 %), converted to CPU ms per page.
"""

from __future__ import annotations

from bench.lib.cli import table
from bench.lib.spy import categorise

# First match wins, so the narrower steps come before the ones that contain them.
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("page parsing (page.parse_page: scanner or html.parser, words, hash)", r"parse_page \("),
    ("links: join + normalise (crawler._links, page_key)", r"_links \(|_canonical \(|page_key \("),
    ("per-page checks (checks.page_findings)", r"page_findings \("),
    ("frontier: add_items (loop + DB thread)", r"Frontier\.add \(|add_items \(seojobs/store/"),
    ("record results: DB thread (SQLAlchemy + SQLite/psycopg)", r"record_items \(seojobs/store/"),
    ("record results: loop side (outcomes, JSON of results)", r"JobContext\.(record|_write)"),
    ("robots.txt verdicts", r"robots_verdict \(|RobotsCache|protego"),
    ("fetcher: guard, pinning, politeness gate", r"AddressGuard|[Pp]inn|HostGate"),
    ("fetcher: the page GET (HttpClient, aiohttp)", r"Fetcher\.fetch \("),
    ("site-wide checks and summary (after the crawl)", r"site_findings \(|summary \("),
    ("items read (open items, read back)", r"open_items|_open_items_after|items_page"),
    ("other DB work (claim, heartbeat, listener)", r"sqlalchemy|sqlite3|psycopg|seojobs/store/"),
    ("aiohttp / HTTP elsewhere", r"aiohttp/|yarl/|multidict/"),
    ("seojobs glue (run_items, handler, worker)", r"seojobs/"),
    ("asyncio event loop", r"asyncio/|selectors"),
)


def profile_lines(raw: str, pages: int, rate: int) -> list[str]:
    total, found = categorise(raw, CATEGORIES, None)
    if not total:
        return ["profile: no samples"]

    def ms(samples: int) -> str:
        return f"{samples / rate / pages * 1000:.3f}"

    rows = [[name, f"{n / total:.1%}", ms(n)] for name, n in found.most_common()]
    lines = [
        f"profile: {total:,} GIL samples at {rate} Hz over one audit of {pages:,} pages "
        f"({ms(total)} ms of GIL time per page; sampling slows the run)",
    ]
    return lines + table(["where the worker's GIL time goes", "share", "ms/page"], rows)
