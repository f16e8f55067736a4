"""Queue throughput and wake-up benchmark: ``python bench/queue.py [--jobs N] [--only ...]``.

Burns down no-op jobs with seojobs on SQLite and PostgreSQL, with Procrastinate (the peer) on
the same PostgreSQL server, and with a bare SQL loop per dialect (the ceiling), then prints
jobs/s, our ratios to both, and the enqueue-to-start latency of an idle worker. See
bench/README.md.

This file is named by the issue, and ``queue`` is also a standard-library module: run as a
script, its folder would come first on ``sys.path`` and shadow the real ``queue`` for asyncio
and concurrent.futures. So before anything else is imported, the folder is swapped for the
repository root and the code is imported as the ``bench`` package (``python -m bench.queue``
works too).
"""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
if str(_HERE.parent) not in sys.path:
    sys.path.insert(0, str(_HERE.parent))

from bench.harness import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
