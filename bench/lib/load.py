"""Load generators for ``bench/api.py``: wrk with a Lua script, or a Python fallback.

How it works and what each figure counts: docs/bench/api.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.lib import REPO

# Writes one line the parent parses. Latencies are in microseconds (wrk's unit).
WRK_SCRIPT = """
local first, span, path, auth, pause
function init(args)
  first = tonumber(args[1])
  span = tonumber(args[2])
  path = args[3]
  auth = args[4]
  pause = tonumber(args[5])
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end
function request()
  local target = path
  if span > 0 then
    target = path .. (first + math.random(0, span - 1))
  end
  return wrk.format("GET", target, {["Authorization"] = auth})
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRK_RESULT %d %d %d %d %d %d %d %d %d %d %d\\n",
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean,
    e.connect, e.read, e.write, e.status, e.timeout))
end
"""
# wrk paces a connection only if the script defines delay() (whole milliseconds).
WRK_PACING = """
function delay()
  return math.floor(-pause * math.log(1 - math.random()) + 0.5)
end
"""


@dataclass(frozen=True)
class Load:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    errors: int  # socket errors and timeouts
    bad_status: int  # answers other than 2xx/3xx

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Target:
    port: int
    path: str  # "/api/v1/index-check/jobs/" (the id is appended) or "/const"
    first_id: int
    span: int  # 0: fixed path
    auth: str


def wrk_path() -> str | None:
    return shutil.which("wrk")


def wrk_version(binary: str) -> str:
    out = subprocess.run([binary, "-v"], capture_output=True, text=True, check=False)
    return (out.stdout + out.stderr).strip().splitlines()[0] if out.stdout or out.stderr else "?"


def run_wrk(
    binary: str, target: Target, connections: int, seconds: float, pause_ms: float = 0.0
) -> Load:
    with tempfile.TemporaryDirectory(prefix="seojobs_api_wrk_") as tmp:
        script = Path(tmp) / "status.lua"
        script.write_text(WRK_SCRIPT + (WRK_PACING if pause_ms > 0 else ""))
        cmd = [
            binary,
            "-t1",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "10s",
            "-s",
            str(script),
            f"http://127.0.0.1:{target.port}",
            "--",
            str(target.first_id),
            str(target.span),
            target.path,
            target.auth,
            str(pause_ms),
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("WRK_RESULT "):
            f = [int(v) for v in line.split()[1:]]
            return Load(
                requests=f[0],
                seconds=f[1] / 1e6,
                p50_ms=f[2] / 1000,
                p99_ms=f[3] / 1000,
                max_ms=f[4] / 1000,
                mean_ms=f[5] / 1000,
                errors=f[6] + f[7] + f[8] + f[10],
                bad_status=f[9],
            )
    raise RuntimeError(f"wrk gave no result (exit {out.returncode}): {out.stderr.strip()[-500:]}")


def run_python(target: Target, connections: int, seconds: float, pause_ms: float = 0.0) -> Load:
    """The fallback: this module in a child process, so it has its own interpreter and GIL."""
    cmd = [
        sys.executable,
        "-m",
        "bench.lib.load",
        str(target.port),
        target.path,
        str(target.first_id),
        str(target.span),
        str(connections),
        str(seconds),
        str(pause_ms),
    ]
    env = {**os.environ, "BENCH_API_AUTH": target.auth}
    out = subprocess.run(
        cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=seconds + 60, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"load generator failed: {out.stderr.strip()[-500:]}")
    return Load(**json.loads(out.stdout.strip().splitlines()[-1]))


# -- the fallback generator (child process) ---------------------------------------------------


async def _connection(
    target: Target,
    stop_at: float,
    pause_ms: float,
    latencies: list[float],
    counts: dict[str, int],
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", target.port)
    try:
        while time.perf_counter() < stop_at:
            if pause_ms > 0:
                await asyncio.sleep(random.expovariate(1000 / pause_ms))
            path = target.path
            if target.span:
                path += str(target.first_id + random.randrange(target.span))
            raw = (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{target.port}\r\n"
                f"Authorization: {target.auth}\r\n\r\n"
            ).encode()
            sent = time.perf_counter()
            writer.write(raw)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - sent)
            status = int(head.split(b" ", 2)[1])
            if not 200 <= status < 400:
                counts["bad_status"] += 1
    except (OSError, asyncio.IncompleteReadError):
        counts["errors"] += 1
    finally:
        writer.close()


async def _drive(target: Target, connections: int, seconds: float, pause_ms: float) -> Load:
    latencies: list[float] = []
    counts = {"errors": 0, "bad_status": 0}
    started = time.perf_counter()
    stop_at = started + seconds
    await asyncio.gather(
        *(_connection(target, stop_at, pause_ms, latencies, counts) for _ in range(connections))
    )
    elapsed = time.perf_counter() - started
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

    return Load(
        requests=len(latencies),
        seconds=elapsed,
        p50_ms=pct(0.50),
        p99_ms=pct(0.99),
        max_ms=latencies[-1] * 1000,
        mean_ms=sum(latencies) / len(latencies) * 1000,
        errors=counts["errors"],
        bad_status=counts["bad_status"],
    )


def _main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.lib.load")
    for name in ("port", "path", "first_id", "span", "connections", "seconds", "pause_ms"):
        parser.add_argument(name)
    args = parser.parse_args()
    target = Target(
        port=int(args.port),
        path=args.path,
        first_id=int(args.first_id),
        span=int(args.span),
        auth=os.environ["BENCH_API_AUTH"],
    )
    load = asyncio.run(
        _drive(target, int(args.connections), float(args.seconds), float(args.pause_ms))
    )
    print(json.dumps(load.__dict__))


if __name__ == "__main__":
    _main()
