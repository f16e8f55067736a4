"""The documentation's shell examples, run as written (like the README quickstart): every
``sh`` block marked ``<!-- runs -->`` in docs/ runs with ``bash -e -o pipefail`` against one
real ``seojobs serve`` per module, after the projects page's setup block. Every ``curl`` it
makes must answer below 400, or with a status its mark allows (``<!-- runs: allow 404 -->``:
reads before any job has completed). Every other block must say why it cannot run
(``<!-- needs: … -->``).

The server runs without a worker, so nothing is fetched and no provider is called: what runs
is the API contract of each example (paths, params, answers). Provider keys are placeholders
whose base URLs point at a closed loopback port, so jobs that need a provider are accepted. The
working directory holds ``technologies.json``, the smallest fingerprint database, which the
tech-stack page installs offline."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.clifork import forwarding
from tests.docblocks import ROOT, Block, blocks, every_block, pages
from tests.e2e.helpers import Spawner, env_without_seojobs, free_port, run_cli, wait_http_ok

# A closed port on loopback: a provider call would fail there, never leave the machine.
NOWHERE = "http://127.0.0.1:9"
PLACEHOLDER_PROVIDERS = {
    "SEOJOBS_INDEXNOW_KEY": "0123456789abcdef0123456789abcdef",
    "SEOJOBS_INDEXNOW_ENDPOINT": f"{NOWHERE}/indexnow",
    "SEOJOBS_SERPER_KEY": "placeholder",
    "SEOJOBS_SERPER_BASE_URL": NOWHERE,
    "SEOJOBS_DATAFORSEO_LOGIN": "placeholder",
    "SEOJOBS_DATAFORSEO_PASSWORD": "placeholder",
    "SEOJOBS_DATAFORSEO_BASE_URL": NOWHERE,
    "SEOJOBS_OPENAI_API_KEY": "placeholder",
    "SEOJOBS_OPENAI_BASE_URL": NOWHERE,
    "SEOJOBS_CRUX_BASE_URL": NOWHERE,
    "SEOJOBS_RDAP_BOOTSTRAP_URL": f"{NOWHERE}/dns.json",
}
# The smallest fingerprint database `seojobs fingerprints update --from` takes.
FINGERPRINTS = {
    "technologies": {"Nginx": {"cats": [22], "headers": {"Server": "nginx"}}},
    "categories": {"22": {"name": "Web servers"}},
}
STATUS = re.compile(r"^@@status (\d{3}) (\S+) (\S+)$", re.M)
BLOCK = re.compile(r"^@@block (-?\d+)$", re.M)


@dataclass(frozen=True)
class Server:
    port: int
    env: dict[str, str]  # what the examples run with: the server's settings, the key, the URL
    workdir: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("docs-examples")
    # The examples call .venv/bin/seojobs: the installed script, forked from the zygote by a
    # stand-in (tests/clifork.py's forwarding), not a fresh interpreter's start (about 0.7
    # CPU-seconds) for each.
    (workdir / ".venv" / "bin").mkdir(parents=True)
    port = free_port()
    env = (
        env_without_seojobs()
        | PLACEHOLDER_PROVIDERS
        | {
            "SEOJOBS_DATABASE_URL": f"sqlite:///{workdir / 'seojobs.db'}",
            "SEOJOBS_FINGERPRINTS_PATH": str(workdir / "fingerprints.json"),
            "SEOJOBS_CHECK_DIAGNOSTICS_ONLY": "true",
            # Every page's examples come from one user: more than 120 requests a minute.
            "SEOJOBS_RATE_LIMIT": "10000/minute",
            "HOME": str(workdir),
        }
    )
    source = workdir / "technologies.json"
    source.write_text(json.dumps(FINGERPRINTS))
    for args in (("migrate",), ("fingerprints", "update", "--from", str(source))):
        done = run_cli(*args, env=env, cwd=workdir)
        assert done.returncode == 0, done.stderr
    made = run_cli("users", "create", "docs", "--json", env=env, cwd=workdir)
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)["api_key"]
    spawner = Spawner(workdir)
    with forwarding(workdir / ".venv" / "bin" / "seojobs"):
        try:
            proc = spawner("serve", "--no-worker", "--port", str(port), env=env, name="serve")
            wait_http_ok(proc, f"http://127.0.0.1:{port}/readyz")
            yield Server(
                port,
                env
                | {"KEY": key, "SEOJOBS_API_KEY": key, "SEOJOBS_URL": f"http://127.0.0.1:{port}"},
                workdir,
            )
        finally:
            spawner.stop_all()


def script(server: Server, page_blocks: list[Block]) -> str:
    """The page's blocks after the setup, each announced on stderr; every curl reports its
    status on stderr (stdout stays as the example pipes it)."""
    setup = [b for b in every_block() if b.setup]
    assert len(setup) == 1, "exactly one block is marked <!-- runs: setup -->"
    parts = [
        "curl() { command curl -w '%{stderr}@@status %{http_code} %{method} %{url_effective}\\n'"
        ' "$@"; }',
        "echo '@@block -1' >&2",
        setup[0].body,
        # The setup's project goes when the page is done (project names are unique per user).
        """trap 'command curl -s -o /dev/null -X DELETE "$API/projects/$P" -H "$H"' EXIT""",
    ]
    for number, block in enumerate(page_blocks):
        parts += [f"echo '@@block {number}' >&2", block.body]
    return "\n".join(parts).replace("127.0.0.1:8000", f"127.0.0.1:{server.port}")


def refused(stderr: str, page_blocks: list[Block]) -> list[str]:
    """Each curl whose status its block does not allow."""
    bad = []
    current = -1
    marks = sorted(
        [(m.start(), "block", m.group(1)) for m in BLOCK.finditer(stderr)]
        + [(m.start(), "status", m.group(0)) for m in STATUS.finditer(stderr)]
    )
    for _, what, value in marks:
        if what == "block":
            current = int(value)
            continue
        code, method, url = STATUS.match(value).groups()  # type: ignore[union-attr]
        allowed = page_blocks[current].allowed if current >= 0 else set()
        if (int(code) >= 400 and int(code) not in allowed) or code == "000":
            where = page_blocks[current].where() if current >= 0 else "setup"
            bad.append(f"{where}: {method} {url} -> {code}")
    return bad


RUNNABLE = [p for p in pages() if any(b.kind == "runs" and not b.setup for b in blocks(p))]


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: p.relative_to(ROOT / "docs").as_posix())
def test_the_page_examples_run_as_written(server: Server, page: Path) -> None:
    page_blocks = [b for b in blocks(page) if b.kind == "runs" and not b.setup]
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script(server, page_blocks)],
        cwd=server.workdir,
        env=server.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = f"--- stdout ---\n{done.stdout[-4000:]}\n--- stderr ---\n{done.stderr[-4000:]}"
    assert done.returncode == 0, report
    ran = [int(n) for n in BLOCK.findall(done.stderr)]
    assert ran == [-1, *range(len(page_blocks))], report
    assert STATUS.search(done.stderr) or "seojobs " in "".join(b.body for b in page_blocks)
    assert not refused(done.stderr, page_blocks), report
