"""The benchmarks' shared library. The entry scripts are ``bench/queue.py``, ``bench/check.py``,
``bench/api.py``, ``bench/poll.py``, ``bench/audit.py``, ``bench/vitals.py``,
``bench/dashboard.py``, ``bench/scale.py`` and ``bench/webhooks.py`` (see docs/bench/);
everything they share is here:

- ``cli``: progress lines, tables (built from columns), the targets table and PASS/FAIL,
  argument types, the environment lines, SIGTERM;
- ``scratch``: scratch PostgreSQL databases and SQLite files; ``procstat``: CPU and memory
  accounting, stopping child processes;
- ``ours``: seojobs as the benchmarks drive it; ``jobs``: the queue benchmark's job kinds and
  records; ``peer``: Procrastinate; ``bare``: the ceilings (plain SQL and HTTP loops);
- ``site``: the local site and fake Serper API; ``servers``: the API benchmark's uvicorn
  processes and apps; ``load``: its load generators; ``spy``: py-spy profiles;
- ``queue_report``, ``check_report``, ``api_report``: the printed reports and targets;
  ``pollsim``: the simulated world of ``bench/poll.py``;
- ``bench/audit.py``'s: ``auditsite`` (the generated site and its server), ``crawl_ours``
  (a ``seojobs worker`` process running a ``site_audit`` job), ``crawl_advertools`` (the
  peer, run by a venv of its own), ``crawl_bare`` (the ceiling) and ``audit_report``
  (its ``--profile`` categories are in ``spy``);
- ``bench/vitals.py``'s: ``vitalsite`` (20 pages with CSS, a script and images, served from
  memory) and ``vitals_runs`` (a ``seojobs worker`` running a ``web_vitals`` job; the
  Lighthouse CLI once per URL, one after another).
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
