"""What every client command shares: exit codes, output streams, error handling, URL input.

Data goes to stdout (a job id, a report, exactly one JSON document with ``--json``); messages
and progress go to stderr, so ``seojobs check -f urls.txt --json | jq`` stays parseable.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import typer

from seojobs.client import errors
from seojobs.client._base import DEFAULT_URL, kind_of
from seojobs.client.state import StateFile, default_path
from seojobs.client.sync import Client

if TYPE_CHECKING:
    from rich.console import Console

MAX_REPORTED_LINES = 20  # malformed input lines listed before "... and N more"


class Exit(IntEnum):
    """The documented exit codes of the client commands."""

    OK = 0  # completed (or submitted, without --wait)
    FAILED = 1  # a job failed
    USAGE = 2  # bad arguments or input, request refused, missing or wrong API key
    TIMEOUT = 3  # --timeout passed; the jobs keep running on the server
    UNAVAILABLE = 4  # rate-limited, server unreachable or failing: try again later
    INTERRUPTED = 130  # Ctrl-C; the jobs keep running on the server


class UsageProblem(Exception):
    """Bad input found before anything was sent: exit 2 with this message."""


# -- connection settings ------------------------------------------------------------------------


@dataclass
class Conn:
    """Where to talk and where to remember: flag, else root flag or environment, else default."""

    url: str = DEFAULT_URL
    api_key: str | None = None
    state_path: Path = field(default_factory=default_path)

    @classmethod
    def resolve(
        cls,
        root: Conn | None,
        url: str | None = None,
        api_key: str | None = None,
        state: Path | None = None,
    ) -> Conn:
        base = root or cls.from_env()
        return cls(
            url=(url or base.url).rstrip("/"),
            api_key=api_key if api_key is not None else base.api_key,
            state_path=state or base.state_path,
        )

    @classmethod
    def from_env(cls) -> Conn:
        return cls(
            url=os.environ.get("SEOJOBS_URL") or DEFAULT_URL,
            api_key=os.environ.get("SEOJOBS_API_KEY"),
            state_path=default_path(),
        )

    def client(self) -> Client:
        """A client for the server, once what can be checked here is right (else exit 2,
        nothing sent and nothing recorded)."""
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageProblem(
                f"--url / SEOJOBS_URL: a URL with http:// or https:// and a host, "
                f"e.g. {DEFAULT_URL}, not {self.url!r}"
            )
        if not self.api_key:
            raise UsageProblem("no API key: pass --api-key or set SEOJOBS_API_KEY")
        return Client(self.url, self.api_key)

    def state(self) -> StateFile:
        return StateFile(self.state_path)


# -- output ------------------------------------------------------------------------------------


class Output:
    """stdout for data, a Rich console on stderr for everything else.

    ``NO_COLOR`` (any non-empty value) turns every style off; live progress is drawn only when
    stderr is a terminal that can redraw (not ``TERM=dumb``). When stderr is no terminal (a
    file, a pipe, a cron job's mail) and nothing forces Rich's styles, the messages are the
    same plain lines written directly: the command does not load Rich.
    """

    def __init__(self, *, as_json: bool = False, stdout: IO[str] | None = None) -> None:
        self.as_json = as_json
        self.no_color = bool(os.environ.get("NO_COLOR"))
        self._stdout = stdout or sys.stdout
        self.live = sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
        # What makes Rich treat stderr as a terminal (it styles nothing otherwise).
        self.plain = not (
            sys.stderr.isatty()
            or os.environ.get("FORCE_COLOR")
            or os.environ.get("TTY_COMPATIBLE") == "1"
        )
        self.printed_json = False

    @functools.cached_property
    def err(self) -> Console:
        """The Rich console on stderr, made on first use."""
        from rich.console import Console

        return Console(
            stderr=True,
            highlight=False,
            soft_wrap=True,
            color_system=None if self.no_color else "auto",
        )

    def _message(self, label: str, style: str, message: str) -> None:
        if self.plain:
            sys.stderr.write(f"{label}{message}\n")
            sys.stderr.flush()
            return
        from rich.markup import escape

        styled = f"[{style}]{label.rstrip()}[/{style}] " if label else ""
        self.err.print(styled + escape(message))

    def data(self, text: str) -> None:
        self._stdout.write(text if text.endswith("\n") else text + "\n")
        self._stdout.flush()

    def raw(self, text: str) -> None:
        self._stdout.write(text)

    def json(self, document: Any) -> None:
        """The one JSON document of a ``--json`` run (a second call is a bug)."""
        assert not self.printed_json, "one JSON document per run"
        self.printed_json = True
        self.data(json.dumps(document, indent=2, default=str))

    def info(self, message: str) -> None:
        self._message("", "", message)

    def warn(self, message: str) -> None:
        self._message("warning: ", "yellow", message)

    def error(self, message: str) -> None:
        self._message("error: ", "bold red", message)


# -- errors → exit codes -----------------------------------------------------------------------


@dataclass
class Guard:
    """Turns every expected failure into a one-line message and its exit code."""

    out: Output
    url: str
    interrupted_hint: str = ""

    @contextlib.contextmanager
    def run(self) -> Iterator[Guard]:
        try:
            yield self
        except KeyboardInterrupt:
            hint = f" {self.interrupted_hint}" if self.interrupted_hint else ""
            self.out.error(f"interrupted.{hint}")
            raise typer.Exit(Exit.INTERRUPTED) from None
        except UsageProblem as exc:
            self.out.error(str(exc))
            raise typer.Exit(Exit.USAGE) from None
        except BrokenPipeError:
            # The reader went away (`seojobs report 1 | head`): stop quietly. stdout points at
            # /dev/null so the interpreter's final flush does not fail again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(Exit.OK) from None
        except errors.WaitTimeout as exc:
            self.out.error(f"timed out: {exc}. The jobs keep running on the server.")
            raise typer.Exit(Exit.TIMEOUT) from None
        except errors.SeojobsError as exc:
            message, code = describe(exc, self.url)
            self.out.error(message)
            raise typer.Exit(code) from None


def describe(exc: errors.SeojobsError, url: str) -> tuple[str, Exit]:
    """The message and exit code for a client error."""
    if isinstance(exc, errors.TransportError):
        return (
            f"cannot reach the seojobs server at {url} ({_cause(exc)}); "
            "check --url / SEOJOBS_URL and that the server runs",
            Exit.UNAVAILABLE,
        )
    if not isinstance(exc, errors.APIError):
        return str(exc), Exit.FAILED
    if isinstance(exc, errors.AuthenticationError) or exc.status == 403:
        return (
            f"the server at {url} refused the API key ({exc.status} {exc.title}); "
            "pass --api-key or set SEOJOBS_API_KEY",
            Exit.USAGE,
        )
    if isinstance(exc, errors.RateLimitedError):
        after = f"; retry after {exc.retry_after:.0f}s" if exc.retry_after is not None else ""
        return f"rate-limited by the server{after}", Exit.UNAVAILABLE
    if isinstance(exc, errors.ServerError | errors.ConflictError):
        return f"the server could not answer: {exc}; try again later", Exit.UNAVAILABLE
    if isinstance(exc, errors.InvalidRequestError | errors.NotFoundError):
        # Field errors are the detail, one per line; the detail alone when there are none.
        said = _field_errors(exc) or (f": {exc.detail}" if exc.detail else "")
        return f"the server refused the request ({exc.status} {exc.title}){said}", Exit.USAGE
    return f"the server answered {exc}", Exit.FAILED


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__
    if cause is None:
        return str(exc)
    return f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__


def _field_errors(exc: errors.APIError) -> str:
    parts = []
    for item in exc.errors[:MAX_REPORTED_LINES]:
        where = item.get("field") or item.get("loc") or ""
        parts.append(f"{where}: {item.get('message') or item.get('msg') or item}")
    return ("\n  " + "\n  ".join(parts)) if parts else ""


def never_sent(exc: BaseException) -> bool:
    """True when a failed POST certainly never reached the server (so no job exists)."""
    if isinstance(exc, errors.TransportError):  # refused, or a URL httpx cannot send to
        return isinstance(exc.__cause__, httpx.ConnectError | httpx.UnsupportedProtocol)
    if isinstance(exc, errors.RateLimitedError):
        return True  # the limiter answers before the request is handled
    return isinstance(exc, errors.APIError) and exc.status in (400, 401, 403, 404, 413, 422)


# -- input -------------------------------------------------------------------------------------


def read_urls(args: list[str], file: str | None, stdin: IO[str] | None = None) -> list[str]:
    """URLs from arguments, then ``-f FILE`` (``-` is stdin), else piped stdin.

    One URL per line; blank lines and ``#`` comments are skipped. Every malformed line is
    reported with its line number and nothing is sent.
    """
    stdin = stdin or sys.stdin
    sources: list[tuple[str, list[str]]] = []
    if args:
        sources.append(("argument", args))
    if file is not None:
        name = "stdin" if file == "-" else file
        sources.append((f"{name}:line", _lines(file, stdin)))
    elif not args:
        if stdin.isatty():
            raise UsageProblem("no URLs: pass them as arguments, with -f FILE, or on stdin")
        sources.append(("stdin:line", stdin.read().splitlines()))
    urls: list[str] = []
    bad: list[str] = []
    for label, lines in sources:
        for number, line in enumerate(lines, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            problem = url_problem(text)
            if problem:
                bad.append(f"{label} {number}: {problem}: {text[:200]!r}")
            else:
                urls.append(text)
    if bad:
        more = len(bad) - MAX_REPORTED_LINES
        listed = bad[:MAX_REPORTED_LINES] + ([f"... and {more} more"] if more > 0 else [])
        raise UsageProblem("malformed input, nothing was sent:\n  " + "\n  ".join(listed))
    if not urls:
        raise UsageProblem("no URLs in the input")
    return urls


def _lines(file: str, stdin: IO[str]) -> list[str]:
    if file == "-":
        return stdin.read().splitlines()
    try:
        return Path(file).read_text(encoding="utf-8-sig").splitlines()
    except OSError as exc:
        raise UsageProblem(f"cannot read {file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageProblem(f"{file} is not UTF-8 text ({exc.reason})") from None


def url_problem(text: str) -> str | None:
    """Why ``text`` is not one absolute http(s) URL, or None."""
    if any(c.isspace() for c in text):
        return "one URL per line, without spaces"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return "not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        return "not an http(s) URL"
    if not parts.hostname:
        return "no host name"
    return None


def parse_kind(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return kind_of(value)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None


def job_line(job: Any) -> str:
    """One human line about a job's state, for stderr."""
    text = f"{job.kind} job {job.job_id}: {job.status}"
    if job.status == "processing":
        text += f" {job.progress_percent}%"
    if job.status == "failed" and job.error is not None:
        text += f" ({job.error.code}: {job.error.message or ''})"
    return text


def exit_status(jobs: list[Any]) -> int:
    """0 if every job completed, 1 if any failed."""
    return 1 if any(job.status == "failed" for job in jobs) else 0
