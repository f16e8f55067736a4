"""API status-GET benchmark: ``python bench/api.py [--jobs N] [--connections 16,64] ...``.

Seeds N index-check jobs (default 100,000) for one user on SQLite and on PostgreSQL, serves
each with one uvicorn process (``create_app(Settings(), run_worker=False)``), and drives
``GET /api/v1/index-check/jobs/{random id}`` with wrk beside a bare FastAPI endpoint that
returns a constant, served by an identical uvicorn process. Prints req/s, p50/p99 latency,
server CPU per request, the ratio to the bare endpoint and PASS/FAIL against the targets
(>= 50 % of bare, p99 <= 25 ms); and, when a target fails (or with ``--profile always``), a
py-spy profile of each server by step of the request. See bench/README.md.

As for ``bench/queue.py``: run as a script, this file's folder would come first on
``sys.path``, and ``bench/queue.py`` would shadow the standard library's ``queue``. So the
folder is swapped for the repository root first (``python -m bench.api`` works too).
"""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
if str(_HERE.parent) not in sys.path:
    sys.path.insert(0, str(_HERE.parent))

from bench.api_harness import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
