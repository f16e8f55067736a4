"""The options of the client commands (``cli_commands``): names, help texts and defaults."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

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
    float | None,
    typer.Option(
        help="Seconds between polls; grows x1.5 while nothing changes (up to 12x), and never "
        "beyond half the server's rate limit. Default: the job types' poll hints "
        "(GET /v1/job-types), or 15 s growing to 300 s from a server that serves none.",
        min=0.05,
        show_default=False,
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
# The engines of the index APIs (the server's enum): checked before anything is sent.
ENGINES = ("google", "bing", "yandex")
Engine = Annotated[str, typer.Option(help="Search engine: google, bing or yandex.")]
# None when not given: with --type it must not be given (the params say everything).
SubmitEngine = Annotated[
    str | None,
    typer.Option("--engine", help="Search engine: google, bing or yandex.", show_default="google"),
]
JobType = Annotated[
    str | None,
    typer.Option(
        "--type",
        help="Start a job of this type (see GET /v1/job-types) in a project, instead of an "
        "index submission; its params come from --param (and URLs from arguments or -f FILE).",
        show_default=False,
        rich_help_panel="Any job type",
    ),
]
Params = Annotated[
    list[str] | None,
    typer.Option(
        "--param",
        help="A param of the --type job, repeatable. VALUE is JSON when it parses as JSON "
        "(5, true, [1,2], {...}), else text.",
        metavar="KEY=VALUE",
        show_default=False,
        rich_help_panel="Any job type",
    ),
]
ProjectOpt = Annotated[
    str | None,
    typer.Option(
        "--project",
        help="The project of the --type job: an id or a name (default: your default project).",
        show_default=False,
        rich_help_panel="Any job type",
    ),
]
WaitType = Annotated[
    str | None,
    typer.Option(
        "--type",
        help="The job type, for jobs not in the state file: read each on /v1/jobs/{id}.",
        show_default=False,
    ),
]
Title = Annotated[str | None, typer.Option(help="A title for the job.", show_default=False)]
Wait = Annotated[bool, typer.Option("--wait", help="Wait for the result; exit by its status.")]


class Format(StrEnum):
    csv = "csv"
    json = "json"
