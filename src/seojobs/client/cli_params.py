"""``seojobs submit --type TYPE --param KEY=VALUE … [--project P]``: the job's params and
project, from the command line to the request the state file records before it is sent.

A value is JSON when it parses as JSON (``5``, ``true``, ``["a", "b"]``, ``{"k": 1}``, ``"5"``)
and text otherwise; JSON has no NaN or Infinity (nor numbers too large for a float), so those
stay text too. The type's params schema (``GET /v1/job-types``) is then consulted: a key it
does not name is refused, and where it says a field is text, a value that merely looks like a
number, a boolean or null (``--param title=2024``) stays the text typed. URLs from arguments or
``-f FILE`` become ``params.urls``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from seojobs.client import errors
from seojobs.client.cli_common import MAX_REPORTED_LINES, UsageProblem, read_urls
from seojobs.client.models import Project
from seojobs.client.sync import Client

URLS = "urls"


@dataclass
class TypedJob:
    """What ``submit --type`` adds to a submission."""

    params: dict[str, Any]
    text: dict[str, str]  # each --param's value as typed
    project: str | None = None  # --project: an id or a name; None for the default project


def typed_job(pairs: list[str], urls: list[str], file: str | None, project: str | None) -> TypedJob:
    """The params of ``--param`` pairs, with URLs of arguments or ``-f FILE`` as ``urls``.
    Unlike ``submit URL…``, stdin is read only with ``-f -``: a job type may take no URLs."""
    params, text = parse_params(pairs)
    if urls or file is not None:
        add_urls(params, read_urls(urls, file))
    if project is not None and not project.strip():
        raise UsageProblem("--project: an id or a name, not empty")
    return TypedJob(params, text, project)


def refuse_untyped(pairs: list[str], project: str | None) -> None:
    if pairs:
        raise UsageProblem("--param needs --type (the job type the params are for)")
    if project is not None:
        raise UsageProblem("--project needs --type: `seojobs submit URL…` goes to the default one")


def refuse_index_options(engine: str | None, checker: int | None) -> None:
    """With ``--type`` the job's params are all ``--param``s: one way to say each."""
    for flag, value, param in (("--engine", engine, "engine"), ("--checker", checker, "checker")):
        if value is not None:
            raise UsageProblem(f"{flag} is for `submit URL…`; with --type use --param {param}=…")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_or_text(raw: str) -> Any:
    """The JSON value ``raw`` spells, or ``raw`` itself."""
    try:
        return json.loads(raw, parse_float=_finite, parse_constant=_no_constant)
    except ValueError:  # JSONDecodeError too
        return raw


def parse_params(pairs: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """``KEY=VALUE`` pairs as params, and the text typed for each. Every malformed pair is
    reported (and nothing is sent): no ``=``, an empty key, a key given twice."""
    params: dict[str, Any] = {}
    typed: dict[str, str] = {}
    bad: list[str] = []
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            bad.append(f"--param {pair[:200]!r}: use KEY=VALUE")
        elif key in params:
            bad.append(f"--param {key}: given twice")
        else:
            params[key], typed[key] = json_or_text(raw), raw
    if bad:
        more = len(bad) - MAX_REPORTED_LINES
        listed = bad[:MAX_REPORTED_LINES] + ([f"... and {more} more"] if more > 0 else [])
        raise UsageProblem("malformed --param, nothing was sent:\n  " + "\n  ".join(listed))
    return params, typed


def add_urls(params: dict[str, Any], urls: list[str]) -> None:
    if not urls:
        return
    if URLS in params:
        raise UsageProblem("urls: given both by --param and as URLs (arguments or -f FILE)")
    params[URLS] = urls


def _string_fields(schema: dict[str, Any]) -> dict[str, bool]:
    """Top-level params the schema types as text only: name -> whether null is allowed too."""
    found = {}
    for name, spec in (schema.get("properties") or {}).items():
        types = {spec.get("type")} | {alt.get("type") for alt in spec.get("anyOf") or ()}
        types.discard(None)
        if "string" in types and types <= {"string", "null"}:
            found[name] = "null" in types
    return found


def _wrongly_parsed(value: Any, nullable: bool) -> bool:
    """A JSON value a text-only field cannot take, so the text typed was meant."""
    return isinstance(value, bool | int | float) or (value is None and not nullable)


def fit_to_schema(
    client: Client, type: str, params: dict[str, Any], typed: dict[str, str]
) -> dict[str, Any]:
    """``params`` checked against the type's params schema (``GET /v1/job-types``).

    A key the type does not take is refused (the server would drop it unread: a misspelt
    ``--param engin=bing`` would silently run with the default engine). Where the schema wants
    text and the text typed parsed as a number, a boolean or (where null is not allowed) null,
    the text goes back. An unknown type, or a server without ``/v1/job-types``, is left to the
    server to judge.
    """
    try:
        types = client.jobs.types()
    except errors.NotFoundError:
        return params
    schema = next((t.params_schema for t in types if t.name == type), None)
    if schema is None:
        return params
    _refuse_unknown(type, schema, params)
    text = {
        name
        for name, nullable in _string_fields(schema).items()
        if name in typed and _wrongly_parsed(params.get(name), nullable)
    }
    return {k: (typed[k] if k in text else v) for k, v in params.items()}


def _refuse_unknown(type: str, schema: dict[str, Any], params: dict[str, Any]) -> None:
    if schema.get("additionalProperties") is True:
        return  # the type keeps whatever it is given
    known = set(schema.get("properties") or {})
    unknown = sorted(set(params) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "no params"
        listed = ", ".join(unknown)
        raise UsageProblem(f"{listed}: not a param of {type} (it takes: {takes}); nothing was sent")


def resolve_project(client: Client, server: str, spec: str | None) -> Project:
    """The project named by ``--project`` (an id of yours, else a name), or the default one."""
    if spec is None:
        return client.projects.default()
    wanted = spec.strip()
    projects = client.projects.list()
    if wanted.isdigit():
        for project in projects:
            if project.id == int(wanted):
                return project
    for project in projects:
        if project.name == wanted:
            return project
    names = ", ".join(f"{p.id} {p.name!r}" for p in projects[:MAX_REPORTED_LINES])
    raise UsageProblem(f"no project {spec!r} on {server} (or not yours); yours: {names}")
