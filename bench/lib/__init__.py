"""What the benchmarks share. Each benchmark is one entry script in ``bench/`` (its systems,
report and targets; docs/bench/ has a page each); here:

- ``core``: every main's frame (``run``: the report, PASS/FAIL, the exit code), argument
  types, CPU and memory from /proc (``Meter``, ``TreeSampler``), scratch PostgreSQL
  databases, child processes (uvicorn apps, ``seojobs worker``), wrk (``interleave``: rounds
  of runs, each a ``Sample`` of named figures);
- ``ours``: seojobs as the benchmarks drive it (``Scratch``: a run's SQLite files and
  PostgreSQL databases, and their migrated templates; users, jobs, an in-process Worker timed
  by ``timed_worker``, a ``seojobs worker`` process running an audit); ``spy``: py-spy
  profiles (``recording``); ``report``: one report's shape (a title, the environment, a row
  per run, blocks, the targets judged, notes; audit, collect, dashboard, vitals, webhooks);
- the crawler processes ``bench/audit.py`` starts: ``crawl_bare`` (the ceiling) and
  ``crawl_advertools`` (the peer, in a venv of its own);
- the sites: ``site`` (pages and a fake Serper API; ``Child``, a server child process),
  ``auditsite`` (a generated site to audit), ``vitalsite`` (pages with CSS, a script and images).
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
