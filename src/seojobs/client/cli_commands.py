"""The client commands of the ``seojobs`` CLI: submit, check, wait, poll, report, jobs.

``register(app)`` adds them (and the global --url / --api-key / --state options) to the
``seojobs`` Typer app; the logic lives in the ``cli_*`` modules next to this one. Only the
client is imported, so these commands work with ``pip install seojobs`` alone.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from seojobs.client import cli_help as text
from seojobs.client.cli_common import (
    Conn,
    Guard,
    Output,
    UsageProblem,
    parse_kind,
    read_urls,
)

CONNECTION = "Connection"

# Global options (before the command) read the environment; the same options given after the
# command win over them.
RootUrl = Annotated[
    str | None,
    typer.Option(
        "--url", envvar="SEOJOBS_URL", help="Server URL.", show_default="http://127.0.0.1:8000"
    ),
]
RootKey = Annotated[
    str | None,
    typer.Option(
        "--api-key", envvar="SEOJOBS_API_KEY", help="API key (prefer the environment variable)."
    ),
]
RootState = Annotated[
    Path | None,
    typer.Option(
        "--state",
        envvar="SEOJOBS_STATE",
        help="Client state file (SQLite).",
        show_default="the user state directory",
        dir_okay=False,
    ),
]
Url = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="Server URL (env SEOJOBS_URL; default http://127.0.0.1:8000).",
        rich_help_panel=CONNECTION,
        show_default=False,
    ),
]
ApiKey = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        help="API key (env SEOJOBS_API_KEY, preferred: argv is visible to other users).",
        rich_help_panel=CONNECTION,
        show_default=False,
    ),
]
State = Annotated[
    Path | None,
    typer.Option(
        "--state",
        help="Client state file (env SEOJOBS_STATE; default in the user state directory).",
        rich_help_panel=CONNECTION,
        show_default=False,
        dir_okay=False,
    ),
]
Json = Annotated[
    bool,
    typer.Option(
        "--json", help="Print exactly one JSON document on stdout; messages go to stderr."
    ),
]
Timeout = Annotated[
    float | None,
    typer.Option(
        help="Give up waiting after this many seconds (exit 3).", min=0, show_default=False
    ),
]
Interval = Annotated[
    float,
    typer.Option(
        help="Seconds between polls; grows x1.5 while nothing changes (up to 12x), and never "
        "beyond half the server's rate limit.",
        min=0.05,
    ),
]
Kind = Annotated[
    str | None,
    typer.Option(
        help="index_submit or index_check, for a job not in the state file "
        "(default: ask the server).",
        show_default=False,
    ),
]
UrlArgs = Annotated[
    list[str] | None,
    typer.Argument(
        help="URLs (or use -f FILE, or pipe them on stdin).", metavar="URL", show_default=False
    ),
]
File = Annotated[
    str | None,
    typer.Option(
        "--file", "-f", help="Read URLs from FILE, one per line ('-' is stdin).", show_default=False
    ),
]
Engine = Annotated[str, typer.Option(help="Search engine: google, bing or yandex.")]
Title = Annotated[str | None, typer.Option(help="A title for the job.", show_default=False)]
Wait = Annotated[bool, typer.Option("--wait", help="Wait for the result; exit by its status.")]


class Format(StrEnum):
    csv = "csv"
    json = "json"


def _conn(ctx: typer.Context, url: str | None, api_key: str | None, state: Path | None) -> Conn:
    root = ctx.obj if isinstance(ctx.obj, Conn) else None
    return Conn.resolve(root, url, api_key, state)


def root_options(
    ctx: typer.Context, url: RootUrl = None, api_key: RootKey = None, state: RootState = None
) -> None:
    """Global client options (server commands ignore them)."""
    ctx.obj = Conn.resolve(None, url, api_key, state)


def _submit(
    ctx: typer.Context,
    kind: str,
    *,
    urls: list[str] | None,
    file: str | None,
    engine: str,
    checker: int | None,
    title: str | None,
    wait: bool,
    timeout: float | None,
    interval: float,
    as_json: bool,
    conn_opts: tuple[str | None, str | None, Path | None],
) -> None:
    from seojobs.client.cli_submit import SubmitArgs, run_submit

    conn = _conn(ctx, *conn_opts)
    out = Output(as_json=as_json)
    guard = Guard(out, conn.url)
    with guard.run():
        if timeout is not None and not wait:
            raise UsageProblem("--timeout needs --wait")
        args = SubmitArgs(
            kind,
            read_urls(urls or [], file),
            engine=engine,
            checker=checker,
            title=title,
            wait=wait,
            timeout=timeout,
            interval=interval,
        )
        code = run_submit(conn, out, args, guard)
    raise typer.Exit(code)


def submit(
    ctx: typer.Context,
    urls: UrlArgs = None,
    file: File = None,
    engine: Engine = "google",
    checker: Annotated[
        int | None,
        typer.Option(help="Check the URLs' index status N days later (1-5).", min=1, max=5),
    ] = None,
    title: Title = None,
    wait: Wait = False,
    timeout: Timeout = None,
    interval: Interval = 5.0,
    as_json: Json = False,
    url: Url = None,
    api_key: ApiKey = None,
    state: State = None,
) -> None:
    """Start an index-submit job: ask search engines to crawl the URLs."""
    _submit(
        ctx,
        "index_submit",
        urls=urls,
        file=file,
        engine=engine,
        checker=checker,
        title=title,
        wait=wait,
        timeout=timeout,
        interval=interval,
        as_json=as_json,
        conn_opts=(url, api_key, state),
    )


def check(
    ctx: typer.Context,
    urls: UrlArgs = None,
    file: File = None,
    engine: Engine = "google",
    title: Title = None,
    wait: Wait = False,
    timeout: Timeout = None,
    interval: Interval = 5.0,
    as_json: Json = False,
    url: Url = None,
    api_key: ApiKey = None,
    state: State = None,
) -> None:
    """Start an index-check job: is each URL indexed, and if not, why not."""
    _submit(
        ctx,
        "index_check",
        urls=urls,
        file=file,
        engine=engine,
        checker=None,
        title=title,
        wait=wait,
        timeout=timeout,
        interval=interval,
        as_json=as_json,
        conn_opts=(url, api_key, state),
    )


def wait(
    ctx: typer.Context,
    jobs: Annotated[list[int], typer.Argument(help="Job ids.", metavar="JOB", show_default=False)],
    kind: Kind = None,
    timeout: Timeout = None,
    interval: Interval = 5.0,
    as_json: Json = False,
    url: Url = None,
    api_key: ApiKey = None,
    state: State = None,
) -> None:
    """Wait for jobs to finish, polling them all on one timer, and save their results."""
    from seojobs.client.cli_submit import run_wait

    conn = _conn(ctx, url, api_key, state)
    out = Output(as_json=as_json)
    guard = Guard(out, conn.url)
    with guard.run():
        code = run_wait(
            conn,
            out,
            guard,
            jobs,
            kind=parse_kind(kind),
            timeout=timeout,
            interval=interval,
        )
    raise typer.Exit(code)


def poll(
    ctx: typer.Context,
    once: Annotated[
        bool, typer.Option("--once", help="One batched round, then exit (for cron).")
    ] = False,
    timeout: Timeout = None,
    interval: Interval = 5.0,
    as_json: Json = False,
    url: Url = None,
    api_key: ApiKey = None,
    state: State = None,
) -> None:
    """Resume every open job in the state file; save each final result, then mark it done."""
    from seojobs.client.cli_poll import run_poll

    conn = _conn(ctx, url, api_key, state)
    out = Output(as_json=as_json)
    guard = Guard(out, conn.url)
    with guard.run():
        code = run_poll(conn, out, guard, once=once, timeout=timeout, interval=interval)
    raise typer.Exit(code)


def report(
    ctx: typer.Context,
    job: Annotated[int, typer.Argument(help="Job id.", metavar="JOB", show_default=False)],
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.csv,
    kind: Kind = None,
    url: Url = None,
    api_key: ApiKey = None,
    state: State = None,
) -> None:
    """Print a job's report: one row per URL, as CSV or as one JSON document."""
    from seojobs.client.cli_report import run_report

    conn = _conn(ctx, url, api_key, state)
    out = Output(as_json=fmt is Format.json)
    with Guard(out, conn.url).run():
        code = run_report(conn, out, job, kind=parse_kind(kind), fmt=fmt.value)
    raise typer.Exit(code)


def jobs(
    ctx: typer.Context,
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Ask the server for the current statuses first.")
    ] = False,
    only_open: Annotated[bool, typer.Option("--open", help="Only jobs not done yet.")] = False,
    as_json: Json = False,
    url: Url = None,
    api_key: ApiKey = None,
    state: State = None,
) -> None:
    """List the jobs in the state file for this server: state, last status, when made."""
    from seojobs.client.cli_report import run_jobs

    conn = _conn(ctx, url, api_key, state)
    out = Output(as_json=as_json)
    with Guard(out, conn.url).run():
        code = run_jobs(conn, out, refresh=refresh, only_open=only_open)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add the client commands and the global connection options to ``app``."""
    app.callback()(root_options)
    app.command(help=text.SUBMIT_HELP, epilog=text.SUBMIT_EPILOG)(submit)
    app.command(help=text.CHECK_HELP, epilog=text.SUBMIT_EPILOG)(check)
    app.command(help=text.WAIT_HELP, epilog=text.WAIT_EPILOG)(wait)
    app.command(help=text.POLL_HELP, epilog=text.POLL_EPILOG)(poll)
    app.command(help=text.REPORT_HELP, epilog=text.REPORT_EPILOG)(report)
    app.command(help=text.JOBS_HELP, epilog=text.JOBS_EPILOG)(jobs)
