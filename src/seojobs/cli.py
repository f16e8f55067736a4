"""The ``seojobs`` command. Server commands import server code lazily, so the client-only
install (``pip install seojobs``) still runs the client commands."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from seojobs.client.cli_commands import register as register_client_commands

if TYPE_CHECKING:
    from seojobs.services.accounts import Accounts
    from seojobs.settings import Settings

app = typer.Typer(
    help="seojobs: SEO work as background jobs. Server, worker and client commands.",
    no_args_is_help=True,
    add_completion=False,
)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
users_app = typer.Typer(help="Manage API users.", no_args_is_help=True)
app.add_typer(users_app, name="users")
# Client commands (submit, check, wait, poll, report, jobs): client code only, see
# seojobs.client.cli_commands.
register_client_commands(app)


SERVER_PACKAGES = ("sqlalchemy", "alembic", "fastapi", "uvicorn", "pydantic_settings", "psycopg")


def _settings() -> Settings:
    """Check the server extras are installed, then read the settings. Call it first."""
    import importlib.util

    try:
        # Found, not imported: importing FastAPI and uvicorn costs `seojobs users list` and
        # the other commands that never serve HTTP half a CPU-second.
        for name in SERVER_PACKAGES:
            if importlib.util.find_spec(name) is None:
                raise ImportError(f"No module named {name!r}", name=name)
        from seojobs.settings import Settings
    except ImportError as exc:
        typer.echo(
            f"this command needs the server extras: pip install 'seojobs[server]' ({exc})",
            err=True,
        )
        raise typer.Exit(2) from None
    return Settings()


def _logging(settings: Settings) -> None:
    from seojobs.logfmt import configure

    configure(settings.log_format)


def _database(settings: Settings, *, logging_set: bool = False) -> None:
    """Say which database a server command uses (password masked), on stderr: a command run
    from another directory must not silently use another ./seojobs.db."""
    from seojobs.store.db import shown_url

    line = f"database: {shown_url(settings.database_url)}"
    if logging_set and settings.log_format == "json":  # a JSON log: every line an object
        logging.getLogger("seojobs").info(line)
    else:
        typer.echo(line, err=True)


def _log_providers(settings: Settings) -> None:
    from seojobs.kinds import load_registry
    from seojobs.kinds.provider_table import log_table

    log_table(settings, load_registry(settings), logging.getLogger("seojobs.providers"))


@app.command()
def serve(
    host: Annotated[
        str, typer.Option(envvar="SEOJOBS_HOST", help="Interface to bind.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(envvar="SEOJOBS_PORT", help="Port to listen on.")] = 8000,
    no_worker: Annotated[
        bool, typer.Option("--no-worker", help="API only; run workers apart.")
    ] = False,
) -> None:
    """Run the API (and an in-process worker unless --no-worker). Migrates the schema first.

    The database is SEOJOBS_DATABASE_URL (default sqlite:///./seojobs.db, relative to the
    current directory); every other setting is an SEOJOBS_* variable (README, Settings).
    """
    settings = _settings()
    import uvicorn

    from seojobs.api import create_app
    from seojobs.api.protocol import uvicorn_config

    class Server(uvicorn.Server):
        # uvicorn re-raises SIGTERM on itself after a graceful shutdown, so the process would
        # exit -15; we have shut down cleanly and exit 0 instead.
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    _logging(settings)
    _database(settings, logging_set=True)
    _log_providers(settings)
    app_ = create_app(settings, run_worker=not no_worker)
    # JSON: uvicorn's records reach the root logger's handler (its own config would print
    # them as plain text); plain: uvicorn's usual colours and access lines.
    log_config = None if settings.log_format == "json" else _plain_uvicorn_logging()
    config = uvicorn_config(
        app_, settings, host=host, port=port, log_level="info", log_config=log_config
    )
    Server(config).run()


def _plain_uvicorn_logging() -> dict[str, Any]:
    """uvicorn's own logging, its lines ending in `` request_id=…`` like ours."""
    import copy

    import uvicorn

    config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["filters"] = {"request_id": {"()": "seojobs.logfmt.RequestIdFilter"}}
    for formatter in config["formatters"].values():
        formatter["fmt"] += "%(request_suffix)s"
    for handler in config["handlers"].values():
        handler["filters"] = ["request_id"]
    return config


@app.command()
def worker(
    concurrency: Annotated[int | None, typer.Option(help="Jobs run at once.", min=1)] = None,
    queue: Annotated[
        list[str] | None,
        typer.Option(help="Serve only the job kinds of this queue (repeatable); default: all."),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            envvar="SEOJOBS_WORKER_METRICS_PORT",
            help="Serve this worker's metrics (Prometheus text, GET /metrics) on this port.",
            min=1,
            max=65535,
        ),
    ] = None,
    metrics_host: Annotated[
        str,
        typer.Option(
            envvar="SEOJOBS_WORKER_METRICS_HOST", help="Interface the metrics port binds."
        ),
    ] = "127.0.0.1",
) -> None:
    """Run a worker process. SIGTERM: jobs finish their current item and are handed back.

    The database is SEOJOBS_DATABASE_URL (default sqlite:///./seojobs.db, relative to the
    current directory); every other setting is an SEOJOBS_* variable (README, Settings).
    """
    # A stop asked for while the worker is still starting (connecting, checking the schema)
    # is kept and honoured once it runs: a clean exit 0, nothing claimed, instead of dying
    # by the signal.
    stop_asked = threading.Event()
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda *_: stop_asked.set())
    settings = _settings()
    import asyncio

    from seojobs.engine.worker import Worker, freeze_startup, tune_malloc

    tune_malloc()  # before any thread starts
    from seojobs.kinds import load_registry
    from seojobs.services import Services
    from seojobs.store import migrate
    from seojobs.store.db import Database

    _logging(settings)
    _database(settings, logging_set=True)
    _log_providers(settings)
    db = Database(settings.database_url)
    registry = load_registry(settings)
    if not migrate.is_current(db, registry.migration_dirs()):
        typer.echo("the database schema is not current: run `seojobs migrate` first", err=True)
        raise typer.Exit(2)
    unknown = sorted(set(queue or ()) - registry.queues())
    if unknown:
        known = ", ".join(sorted(registry.queues()))
        typer.echo(f"unknown queue(s) {', '.join(unknown)}; known: {known}", err=True)
        raise typer.Exit(2)
    services = Services(db, settings, registry)
    w = Worker(
        db,
        settings,
        registry,
        concurrency=concurrency,
        queues=queue or None,
        fire_schedule=services.schedules.fire,
        background=[services.webhook_dispatcher().run],
    )

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, w.stop)
        if stop_asked.is_set():
            w.stop()
        await w.run()

    logging.getLogger("seojobs.worker").info("worker %s starting", w.worker_id)
    if metrics_port is not None:
        from seojobs.telemetry import serve_worker_metrics

        serve_worker_metrics(metrics_host, metrics_port)
    if settings.gc_freeze:
        freeze_startup()
    asyncio.run(main())
    db.dispose()


@app.command("migrate")
def migrate_cmd() -> None:
    """Create or upgrade the database schema.

    The database is SEOJOBS_DATABASE_URL (default sqlite:///./seojobs.db, relative to the
    current directory); every other setting is an SEOJOBS_* variable (README, Settings).
    """
    settings = _settings()
    _database(settings)
    from seojobs.kinds import migration_dirs
    from seojobs.store import migrate
    from seojobs.store.db import Database

    db = Database(settings.database_url)
    extra = migration_dirs(settings)
    migrate.upgrade(db, extra=extra)
    typer.echo(f"schema at {migrate.current_revision(db, extra)} ({db.dialect})")
    db.dispose()


@contextlib.contextmanager
def user_accounts(settings: Settings) -> Iterator[Accounts]:
    """The accounts on the settings' database, migrated to head (a new one is created): that
    part of the services alone, without the kinds' declarations (``migration_dirs``)."""
    from seojobs.kinds import migration_dirs
    from seojobs.services.accounts import Accounts
    from seojobs.store import migrate
    from seojobs.store.db import Database

    _database(settings)
    db = Database(settings.database_url)
    try:
        migrate.upgrade(db, extra=migration_dirs(settings))
        yield Accounts.open(db, settings)
    finally:
        db.dispose()


def _print_key(user_id: int, name: str, key: str, as_json: bool, what: str) -> None:
    if as_json:
        typer.echo(json.dumps({"user_id": user_id, "api_key": key}))
    else:
        typer.echo(f"user {user_id} ({name}) {what}.")
        typer.echo(f"API key (shown once, store it now): {key}")


@users_app.command("create")
def users_create(
    name: Annotated[str, typer.Argument(help="A name for the user (unique).")],
    rate_limit: Annotated[
        int | None, typer.Option(help="Requests per minute (default: SEOJOBS_RATE_LIMIT).", min=1)
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print {user_id, api_key} as JSON.")
    ] = False,
) -> None:
    """Create a user and print its API key. The key is shown only this once."""
    from seojobs.textrules import name as name_rule

    try:  # the rule every name meets, whichever door (issue 25.5)
        name = name_rule(name)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="NAME") from None
    settings = _settings()
    from seojobs.services.errors import Conflict

    with user_accounts(settings) as accounts:
        try:
            created = accounts.create_user(
                name, rate_limit=f"{rate_limit}/minute" if rate_limit else None
            )
        except Conflict as exc:
            typer.echo(f"{exc}: pick another name, or `seojobs users rotate-key {name}`", err=True)
            raise typer.Exit(1) from None
    _print_key(created.user.id, name, created.api_key, as_json, "created")


@users_app.command("list")
def users_list(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per user.")] = False,
) -> None:
    """Every user: id, name, rate limit, created, disabled."""
    settings = _settings()
    with user_accounts(settings) as accounts:
        found = accounts.users()
    for user in found:
        row = {
            "user_id": user.id,
            "name": user.name,
            "rate_limit": user.rate_limit,
            "created_at": user.created_at.isoformat(),
            "disabled_at": user.disabled_at.isoformat() if user.disabled_at else None,
        }
        if as_json:
            typer.echo(json.dumps(row))
        else:
            state = f"disabled {row['disabled_at']}" if user.disabled_at else "active"
            limit = user.rate_limit or "default rate limit"
            typer.echo(f"{user.id}\t{user.name}\t{state}\t{limit}\tcreated {row['created_at']}")


def _named(accounts: Accounts, name: str) -> None:
    from seojobs.services.errors import NotFound

    try:
        accounts.user_named(name)
    except NotFound:
        typer.echo(f"no user named {name!r} (see `seojobs users list`)", err=True)
        raise typer.Exit(1) from None


@users_app.command("rotate-key")
def users_rotate_key(
    name: Annotated[str, typer.Argument(help="The user's name.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print {user_id, api_key} as JSON.")
    ] = False,
) -> None:
    """Give a user a new API key, printed once. The old key stops working within 5 s (the
    API's authentication cache)."""
    settings = _settings()
    with user_accounts(settings) as accounts:
        _named(accounts, name)
        rotated = accounts.rotate_key(name)
    _print_key(rotated.user.id, name, rotated.api_key, as_json, "has a new key")


@users_app.command("disable")
def users_disable(name: Annotated[str, typer.Argument(help="The user's name.")]) -> None:
    """Disable a user: its API key stops working within 5 s (the API's authentication cache);
    its projects, jobs and data stay. `rotate-key` does not re-enable it."""
    settings = _settings()
    with user_accounts(settings) as accounts:
        _named(accounts, name)
        user = accounts.disable_user(name)
    typer.echo(f"user {user.id} ({name}) disabled.")


@app.command("providers")
def providers_cmd(
    offline: Annotated[
        bool, typer.Option("--offline", help="Only the table; contact no provider.")
    ] = False,
) -> None:
    """Which providers serve which job type's role on which engine, which are configured, and
    whether each configured credential works (one request to each provider; exit 1 if one is
    refused)."""
    settings = _settings()
    import asyncio

    from seojobs.kinds import load_registry
    from seojobs.kinds.provider_table import rows, verify_all

    registry = load_registry(settings)  # the roles its kinds declare, plug-ins' too
    for row in rows(settings, registry):
        typer.echo(row.text(settings))
    if offline:
        return
    failed = False
    for name, ok, message in asyncio.run(verify_all(settings, registry)):
        typer.echo(f"credential {name}: {'ok' if ok else 'FAILED'}: {message}")
        failed = failed or not ok
    if failed:
        raise typer.Exit(1)


fingerprints_app = typer.Typer(help="The tech-stack fingerprint database.", no_args_is_help=True)
app.add_typer(fingerprints_app, name="fingerprints")


@fingerprints_app.command("update")
def fingerprints_update(
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="A directory (technologies/*.json + categories.json), a merged JSON file, "
            "a .tar.gz/.zip of the webappanalyzer repository, or an http(s) URL of either "
            "(default: the webappanalyzer repository's archive).",
        ),
    ] = None,
) -> None:
    """Install the webappanalyzer fingerprint database (GPL-3.0, not shipped with seojobs)
    where SEOJOBS_TECH_STACK_FINGERPRINTS_PATH (or SEOJOBS_FINGERPRINTS_PATH) says; the old
    one is replaced atomically."""
    settings = _settings()
    from seojobs.engine.kindsettings import of
    from seojobs.kinds.tech_stack import TechStackSettings
    from seojobs.kinds.tech_stack.database import InvalidDatabase
    from seojobs.kinds.tech_stack.install import DEFAULT_SOURCE, update

    try:
        done = update(source or DEFAULT_SOURCE, of(TechStackSettings, settings).fingerprints_path)
    except InvalidDatabase as exc:
        typer.echo(f"not installed (the old database, if any, is kept): {exc}", err=True)
        raise typer.Exit(1) from None
    for line in done.summary():
        typer.echo(line)


def failure_line(exc: BaseException) -> str:
    """One line for what stopped a command: a setting the environment gave a bad value names
    the setting; anything else its type and first line, printable whatever it holds."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        problems = [
            f"SEOJOBS_{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}"
            for error in exc.errors()
        ]
        line = "invalid setting " + "; ".join(problems)
    else:
        detail = (str(exc).strip().splitlines() or [""])[0]
        line = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    # An argument or a file name that is not UTF-8 arrives with surrogate escapes: shown
    # escaped (printing it would raise again), and bounded.
    line = line.encode("utf-8", "backslashreplace").decode("utf-8")
    return line if len(line) <= 300 else line[:299] + "…"


def main() -> None:
    """The ``seojobs`` command. A failure no command handled (a database that cannot be
    reached, a bad setting, an argument that is not UTF-8) ends with one line on stderr and
    status 1, never a traceback (issue 25.7)."""
    # httpx imports its own command line when its optional packages are installed (click,
    # pygments, Rich's tables and progress bars: a third of a client command's start); this
    # process never runs it, and httpx does without it when it cannot be imported.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    try:
        app_command()
    except Exception as exc:
        typer.echo(f"seojobs: {failure_line(exc)}", err=True)
        raise SystemExit(1) from None


# The click command ``app()`` would build from the typer app, built once as the module is
# imported (a process that imported it before forking, such as the tests' zygote, keeps it):
# every command's start built it again, about 20 ms of reading signatures and type hints.
app_command = typer.main.get_command(app)
