"""What the benchmarks share (each benchmark is an entry script in ``bench/``; docs/bench/ has a
page each): ``report``, every report's shape, its targets judged and the exit code; ``core``,
tables, argument types, CPU and memory from /proc, scratch PostgreSQL databases, child
processes and wrk; ``ours``, seojobs as the benchmarks drive it; ``spy``, py-spy profiles; the
crawlers bench/audit.py starts (``crawl_bare``, ``crawl_advertools``); and the sites (``site``:
pages and a fake Serper, ``Child``: a server child process; ``auditsite``; ``vitalsite``)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
