"""Index-check benchmark: ``python bench/check.py [--urls N] [--concurrency 8,32,64] [...]``.

Index checks of 2,000 URLs against a local site and a local fake Serper API, run by a real
seojobs Worker (SQLite and PostgreSQL), next to a bare httpx loop sending the same two requests
per URL at the same concurrency in the same run. Prints URLs/s, the ratio to the bare loop and
the targets (>= 500 URLs/s per worker process, >= 0.7 of the bare loop). See bench/README.md.

Run as a script, this file's folder would come first on ``sys.path``, and ``bench/queue.py``
would shadow the standard-library ``queue`` that asyncio and concurrent.futures import. So
before anything else is imported the folder is swapped for the repository root and the code is
imported as the ``bench`` package (``python -m bench.check`` works too).
"""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
if str(_HERE.parent) not in sys.path:
    sys.path.insert(0, str(_HERE.parent))

from bench.check_harness import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
