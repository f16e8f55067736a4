"""``bench/audit.py``'s peer, ``advertools.crawl`` (Scrapy), run by the peer venv's Python:
``-m bench.lib.crawl_advertools OUTPUT.jl START_URL CONCURRENCY`` prints one JSON line
``{"seconds", "pages", "private", "cpu", "version"}``. How it is run: docs/bench/audit.md.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import resource
import sys
import time
from urllib.parse import urlsplit


def children_cpu() -> float:
    """CPU seconds of the children that ended (Scrapy's); not bench.lib.core's: this venv has
    neither psycopg nor seojobs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    output, start, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # advertools runs `scrapy runspider` from PATH: this venv's one.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    import advertools  # type: ignore[import-not-found]  # the peer venv's

    settings = {
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "ROBOTSTXT_OBEY": True,
        "AUTOTHROTTLE_ENABLED": False,
        "DOWNLOAD_DELAY": 0,
        "LOG_LEVEL": "WARNING",
    }
    host = urlsplit(start).hostname or ""
    cpu, children = time.process_time(), children_cpu()
    started = time.perf_counter()
    advertools.crawl(
        [start], output, follow_links=True, allowed_domains=[host], custom_settings=settings
    )
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu + children_cpu() - children
    pages = private = 0
    with open(output, encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            path = urlsplit(row.get("url", "")).path
            private += path.startswith("/private/")
            pages += row.get("status") == 200 and not path.startswith("/private/")
    version = importlib.metadata.version("advertools")
    scrapy = importlib.metadata.version("scrapy")
    report = {"seconds": seconds, "pages": pages, "private": private, "cpu": cpu}
    print(json.dumps({**report, "version": f"advertools {version} (Scrapy {scrapy})"}), flush=True)


if __name__ == "__main__":
    main()
