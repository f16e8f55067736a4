"""The client commands of the ``seojobs`` CLI: submit, check, wait, poll, report, jobs.

``register(app)`` adds them (and the global --url / --api-key / --state options) to the
``seojobs`` Typer app; the logic lives in the ``cli_*`` modules next to this one. Only the
client is imported, so these commands work with ``pip install seojobs`` alone, and only when a
client command runs: ``seojobs serve`` and the other server commands never import it (nor
httpx, Rich's console or the client's models).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from seojobs.client import cli_help as text
from seojobs.client.cli_options import (
    ENGINES,
    ApiKey,
    Engine,
    File,
    Format,
    Interval,
    JobType,
    Json,
    Kind,
    Params,
    ProjectOpt,
    RootKey,
    RootState,
    RootUrl,
    State,
    SubmitEngine,
    Timeout,
    Title,
    Url,
    UrlArgs,
    Wait,
    WaitType,
)

if TYPE_CHECKING:
    from seojobs.client.cli_common import Conn
    from seojobs.client.cli_submit import SubmitArgs


@dataclass(frozen=True)
class RootOptions:
    """The global --url / --api-key / --state, as given (resolved by the command that uses
    them: server commands ignore them)."""

    url: str | None
    api_key: str | None
    state: Path | None


def _conn(ctx: typer.Context, url: str | None, api_key: str | None, state: Path | None) -> Conn:
    from seojobs.client.cli_common import Conn

    given = ctx.obj if isinstance(ctx.obj, RootOptions) else None
    root = Conn.resolve(None, given.url, given.api_key, given.state) if given else None
    return Conn.resolve(root, url, api_key, state)


def root_options(
    ctx: typer.Context, url: RootUrl = None, api_key: RootKey = None, state: RootState = None
) -> None:
    """Global client options (server commands ignore them)."""
    ctx.obj = RootOptions(url, api_key, state)


@dataclass
class Typed:
    """submit's options for a job of any type (all None: an index submission)."""

    job_type: str | None = None
    params: list[str] | None = None
    project: str | None = None


def _submit_args(
    kind: str,
    urls: list[str],
    file: str | None,
    engine: str | None,
    checker: int | None,
    typed: Typed,
) -> SubmitArgs:
    from seojobs.client import cli_params
    from seojobs.client.cli_common import UsageProblem, read_urls
    from seojobs.client.cli_submit import SubmitArgs

    if typed.job_type is None:
        cli_params.refuse_untyped(typed.params or [], typed.project)
        engine = engine or "google"
        if engine not in ENGINES:
            raise UsageProblem(f"--engine: one of {', '.join(ENGINES)}, not {engine!r}")
        return SubmitArgs(kind, read_urls(urls, file), engine=engine, checker=checker)
    if not typed.job_type.strip():
        raise UsageProblem("--type: a job type, not empty")
    cli_params.refuse_index_options(engine, checker)
    job = cli_params.typed_job(typed.params or [], urls, file, typed.project)
    return SubmitArgs(typed.job_type.strip(), [], typed=job)


def _submit(
    ctx: typer.Context,
    kind: str,
    *,
    urls: list[str] | None,
    file: str | None,
    engine: str | None,
    checker: int | None,
    title: str | None,
    wait: bool,
    timeout: float | None,
    interval: float | None,
    as_json: bool,
    conn_opts: tuple[str | None, str | None, Path | None],
    typed: Typed | None = None,
) -> None:
    from seojobs.client.cli_common import Guard, Output, UsageProblem
    from seojobs.client.cli_submit import run_submit

    conn = _conn(ctx, *conn_opts)
    out = Output(as_json=as_json)
    guard = Guard(out, conn.url)
    with guard.run():
        if timeout is not None and not wait:
            raise UsageProblem("--timeout needs --wait")
        args = _submit_args(kind, urls or [], file, engine, checker, typed or Typed())
        args.title, args.wait, args.timeout, args.interval = title, wait, timeout, interval
        code = run_submit(conn, out, args, guard)
    raise typer.Exit(code)


def submit(
    ctx: typer.Context,
    urls: UrlArgs = None,
    file: File = None,
    engine: SubmitEngine = None,
    checker: Annotated[
        int | None,
        typer.Option(help="Check the URLs' index status N days later (1-5).", min=1, max=5),
    ] = None,
    title: Title = None,
    wait: Wait = False,
    timeout: Timeout = None,
    interval: Interval = None,
    as_json: Json = False,
    job_type: JobType = None,
    params: Params = None,
    project: ProjectOpt = None,
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
        typed=Typed(job_type, params, project),
    )


def check(
    ctx: typer.Context,
    urls: UrlArgs = None,
    file: File = None,
    engine: Engine = "google",
    title: Title = None,
    wait: Wait = False,
    timeout: Timeout = None,
    interval: Interval = None,
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
    job_type: WaitType = None,
    timeout: Timeout = None,
    interval: Interval = None,
    webhook_port: Annotated[
        int | None,
        typer.Option(
            help="Also learn of each job's end from a webhook, on a one-shot receiver at "
            "127.0.0.1:N (0: any free port) registered for this wait and deleted after; "
            "polling goes on beneath. The server must be allowed to deliver to loopback.",
            min=0,
            max=65535,
            show_default=False,
        ),
    ] = None,
    as_json: Json = False,
    url: Url = None,
    api_key: ApiKey = None,
    state: State = None,
) -> None:
    """Wait for jobs to finish, polling them all on one timer, and save their results."""
    from seojobs.client.cli_common import Guard, Output, UsageProblem, parse_kind
    from seojobs.client.cli_submit import run_wait

    conn = _conn(ctx, url, api_key, state)
    out = Output(as_json=as_json)
    guard = Guard(out, conn.url)
    with guard.run():
        if kind is not None and job_type is not None:
            raise UsageProblem("give --kind (an index kind) or --type, not both")
        code = run_wait(
            conn,
            out,
            guard,
            jobs,
            kind=parse_kind(kind),
            job_type=job_type.strip() if job_type else None,
            timeout=timeout,
            interval=interval,
            webhook_port=webhook_port,
        )
    raise typer.Exit(code)


def poll(
    ctx: typer.Context,
    once: Annotated[
        bool, typer.Option("--once", help="One batched round, then exit (for cron).")
    ] = False,
    timeout: Timeout = None,
    interval: Interval = None,
    as_json: Json = False,
    url: Url = None,
    api_key: ApiKey = None,
    state: State = None,
) -> None:
    """Resume every open job in the state file; save each final result, then mark it done."""
    from seojobs.client.cli_common import Guard, Output
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
    from seojobs.client.cli_common import Guard, Output, parse_kind
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
    from seojobs.client.cli_common import Guard, Output
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
