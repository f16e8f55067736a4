"""The kind registry: a kind declares everything about one job type, and is found by name.

A ``Kind`` is the one extension seam: its params model, its handler, its items, what it costs
against which quota, whether it can be scheduled, what creating one also creates (follow-ups),
its report columns, the queue and per-worker concurrency it runs with, its timeout, its own
settings, and whether this deployment can run it at all (``refusal``: e.g. no provider for its
engine). Nothing outside the kind branches on its name.

Kinds come from three places: the built-in ones (``seojobs.kinds``), installed plug-ins that
declare an entry point in the ``seojobs.kinds`` group, and modules named in the
``SEOJOBS_PLUGINS`` setting. An entry point or plug-in module exposes ``register(registry)``.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.json_schema import DEFAULT_REF_TEMPLATE
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_settings import BaseSettings

from seojobs.engine.hints import DEFAULT_POLL_HINT, PollHint

# Re-exported: kinds and plug-ins name Quota from here (and from seojobs.engine).
from seojobs.engine.quotas import Quota as Quota
from seojobs.engine.roles import ProviderRole
from seojobs.engine.views import GENERIC_VIEW, DashboardView
from seojobs.fielderrors import message
from seojobs.jsontypes import Schema, value_at
from seojobs.reads import ChangeEvent, JobCompare, JobRead, Read
from seojobs.records import NewItem, ProjectDefaults
from seojobs.rowshape import KindTable
from seojobs.store import kindrows

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

ENTRY_POINT_GROUP = "seojobs.kinds"

P = TypeVar("P", bound=BaseModel)

# One item's input: a string (a URL, a page) or a structured item (keyword x location x device),
# stored as canonical JSON.
ItemInput = str | Mapping[str, Any]


def item_text(value: ItemInput) -> str:
    """How an item is stored: strings as they are, structured items as canonical JSON (so two
    equal dicts are one item whatever their key order)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class FollowUp:
    """A job that creating another one also creates, in the same transaction (a submission's
    index check N days later). Charged as the same job started directly would be, when its
    parent is created (its cost counts in the parent's quota check)."""

    kind: str
    params: dict[str, Any]
    delay_seconds: float = 0.0
    title: str | None = None


@dataclass(frozen=True)
class ReportColumn:
    """A CSV report column: ``path`` is a dotted path into an item's result."""

    name: str
    path: str

    def value(self, result: Mapping[str, Any] | None) -> Any:
        found: Any = result or {}
        for part in self.path.split("."):
            if not isinstance(found, Mapping):
                return None
            found = found.get(part)
        return found


@dataclass(frozen=True)
class Refusal:
    """Why this deployment cannot run a job of these params (e.g. no provider is configured
    for its engine): ``field`` is the param to blame, ``message`` names the settings to set."""

    code: str
    message: str
    field: str = "params"


def _no_cost(_params: Any, _items: int) -> dict[str, int]:
    return {}


@dataclass(frozen=True)
class Kind(Generic[P]):
    name: str
    params: type[P]
    handler: Callable[[JobContext[P]], Awaitable[None]]
    # The per-item inputs of a job known at creation (URLs), derived from its validated params.
    # A kind may add more while running (``ctx.add_items``); None for kinds without items.
    items: Callable[[P], Sequence[ItemInput]] | None = None
    # An item's dedupe key (e.g. a normalised URL); by default its stored text.
    item_key: Callable[[ItemInput], str] | None = None
    description: str = ""
    # Small params that status reads need; the rest (e.g. 10,000 URLs) stays unread there.
    summary_params: tuple[str, ...] = ()
    # Can a collection schedule start it? Schedules fire through the same creation path as a
    # POST, so quotas apply to scheduled jobs too.
    schedulable: bool = True
    # Seed 001 runs some kinds only when started (audits, web vitals): a project's
    # collection of such a kind stays off unless it is enabled explicitly (issue 29.8).
    collection_opt_in: bool = False
    # What a job costs: ``cost(params, item_count) -> {quota_name: amount}``, charged when it
    # is created; a job over a quota is stored failed with ``quota_exceeded``.
    cost: Callable[[P, int], Mapping[str, int]] = _no_cost
    quotas: tuple[Quota, ...] = ()
    # Jobs that creating one of this kind also creates: ``follow_ups(params, job_id, settings)``.
    follow_ups: Callable[[P, int, Any], Sequence[FollowUp]] | None = None
    # Can this deployment run a job of these params at all? ``refusal(params, settings)``
    # answers why not (a missing provider): creation refuses such a job before anything is
    # written, and a schedule's tick stores it failed with the refusal's code.
    refusal: Callable[[P, Any], Refusal | None] | None = None
    # The params a job of the kind takes from its project when the request leaves them out:
    # its tracked fields (issue 29.1: a rank check's target and competitors) or the settings
    # the kind keeps per project (issue 30.4: an audit's). The request's params and a
    # ``records.ProjectDefaults`` in, the params to validate out.
    project_params: Callable[[Mapping[str, Any], ProjectDefaults], dict[str, Any]] | None = None
    # The kind keeps settings per project (``/v1/projects/{id}/audit-settings`` for
    # ``site_audit``): they are read for ``project_params`` when a job is made.
    project_settings: bool = False
    # CSV report columns besides the generic ones (input, status, error, finished_at).
    report_columns: tuple[ReportColumn, ...] = ()
    # Workers serve queues (``seojobs worker --queue``); ``concurrency`` caps the jobs of
    # this kind one worker runs at once (a Chromium pool must not take the slots of cheap
    # HTTP checks). None: only the worker's total applies.
    queue: str = "default"
    concurrency: int | None = None
    # Seconds a job may run before it fails with code ``timeout``; None: no limit.
    timeout: float | None = None
    # The kind's own settings: a pydantic-settings model with its own env prefix (e.g.
    # ``SEOJOBS_SITE_AUDIT_``), built once per worker and handed to jobs as ``ctx.kind_settings``.
    settings: type[BaseSettings] | None = None
    # Alembic version directories of the tables this kind owns (a plug-in's, outside the
    # package); they join the one migration chain (``seojobs migrate``).
    migrations: tuple[str, ...] = field(default=())
    # Tables this kind owns, declared as plain data (their rows are written through
    # ``JobContext.replace_rows``); the store builds them when a registry adds the kind.
    tables: tuple[KindTable[Any], ...] = field(default=())
    # How often a client should read one of its jobs, and for how long (``/v1/job-types``
    # serves it; the SDK and CLI wait by it): seed 000's schedule unless the kind says.
    poll_hint: PollHint = DEFAULT_POLL_HINT
    # What it needs a provider adapter for, and which adapters serve it in what order
    # (``seojobs providers`` lists them; ``seojobs.kinds.providers`` picks one).
    providers: tuple[ProviderRole, ...] = ()
    # How the dashboard shows what it collected (seojobs.engine.views).
    view: DashboardView = GENERIC_VIEW
    # What one router serves of what it collects (seojobs.reads): plain data, mounted under
    # /v1/projects/{project_id}/ when the app is built.
    reads: tuple[Read, ...] = ()
    # What one of its completed jobs wrote (its findings, a table it owns), read per job, and
    # how what one found differs from what another found (JobCompare).
    job_reads: tuple[JobRead | JobCompare, ...] = ()
    # The webhook events its collections make when they differ from the previous collection
    # of the same subject (seojobs.reads.ChangeEvent): declared beside its reads.
    changes: tuple[ChangeEvent, ...] = ()

    def validate(self, params: Mapping[str, Any]) -> P:
        """Params as stored (a schedule's, a follow-up's): the server's own fields included."""
        try:
            return self.params.model_validate(params)
        except ValidationError as exc:
            raise InvalidParams(self.name, exc) from None

    def validate_new(self, params: Mapping[str, Any]) -> P:
        """A request's params. Fields the kind marks ``readOnly`` in its schema are its own to
        fill in (e.g. ``duplicates_removed``): params that set one are refused."""
        try:
            _refuse_what_pydantic_takes(self.params, params)
        except ValidationError as exc:
            raise InvalidParams(self.name, exc) from None
        return self.validate(params)

    def new_item(self, value: ItemInput) -> NewItem:
        text = item_text(value)
        key = self.item_key(value) if self.item_key else text
        return NewItem.of(text, data=None if isinstance(value, str) else dict(value), key=key)

    def new_items(self, values: Iterable[ItemInput]) -> list[NewItem]:
        """Items to store, each once by its dedupe key (the first occurrence kept)."""
        unique: dict[str, NewItem] = {}
        for value in values:
            item = self.new_item(value)
            unique.setdefault(item.key, item)
        return list(unique.values())

    def inputs(self, model: P) -> list[str]:
        return [item_text(value) for value in self.items(model)] if self.items else []


class UnknownKind(LookupError):
    def __init__(self, name: str, known: Iterable[str]) -> None:
        super().__init__(f"unknown job kind {name!r}; known kinds: {', '.join(sorted(known))}")
        self.name = name


class InvalidParams(ValueError):
    """Params failed validation; ``errors`` name each field (pydantic's ``loc``)."""

    def __init__(self, kind: str, error: ValidationError) -> None:
        self.kind = kind
        self.errors: list[dict[str, Any]] = [
            {"field": ".".join(str(p) for p in e["loc"]) or "params", "message": message(e)}
            for e in error.errors()
        ]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in self.errors)
        super().__init__(f"invalid params for {kind}: {detail}")


class Registry:
    def __init__(self) -> None:
        self._kinds: dict[str, Kind[Any]] = {}

    def add(self, kind: Kind[Any]) -> Kind[Any]:
        if kind.name in self._kinds and self._kinds[kind.name] is not kind:
            raise ValueError(f"job kind {kind.name!r} is registered twice")
        quotas = {q.name: q for k in self._kinds.values() for q in k.quotas}
        for quota in kind.quotas:
            if quotas.get(quota.name, quota) != quota:
                raise ValueError(f"quota {quota.name!r} is declared twice, differently")
        events = self.change_events()
        for change in kind.changes:
            if change.kind != kind.name:
                raise ValueError(
                    f"event {change.name!r} of {kind.name!r} names kind {change.kind!r}"
                )
            if change.name in events:
                raise ValueError(f"event type {change.name!r} is declared twice")
        for table in kind.tables:
            kindrows.declare(table)
        self._kinds[kind.name] = kind
        return kind

    def get(self, name: str) -> Kind[Any]:
        try:
            return self._kinds[name]
        except KeyError:
            raise UnknownKind(name, self._kinds) from None

    def kinds(self) -> list[Kind[Any]]:
        return [self._kinds[name] for name in sorted(self._kinds)]

    def quotas(self) -> dict[str, Quota]:
        """Every quota some kind declares, by name."""
        return {q.name: q for kind in self.kinds() for q in kind.quotas}

    def provider_roles(self) -> list[ProviderRole]:
        """Every provider role some kind declares, each once, in the order kinds were added."""
        roles: dict[str, ProviderRole] = {}
        for kind in self._kinds.values():
            for role in kind.providers:
                roles.setdefault(role.name, role)
        return list(roles.values())

    def change_events(self) -> dict[str, ChangeEvent]:
        """Every change event some kind declares, by type, in the order kinds were added."""
        return {change.name: change for kind in self._kinds.values() for change in kind.changes}

    def queues(self) -> set[str]:
        return {kind.queue for kind in self._kinds.values()}

    def migration_dirs(self) -> list[str]:
        return [path for kind in self.kinds() for path in kind.migrations]

    def summary_keys(self) -> tuple[str, ...]:
        return tuple(sorted({key for kind in self._kinds.values() for key in kind.summary_params}))

    def names(self) -> list[str]:
        return sorted(self._kinds)

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def validate(self, name: str, params: Mapping[str, Any]) -> tuple[BaseModel, list[str]]:
        """Validate new params for a kind (a request's, never stored ones); returns the model
        and the item inputs."""
        kind = self.get(name)
        model = kind.validate_new(params)
        return model, kind.inputs(model)

    def load_plugins(self, modules: Iterable[str] = ()) -> None:
        for ep in plugin_entry_points():
            _call_register(ep.load(), self, f"entry point {ep.name!r}")
        for module_name in modules:
            module = importlib.import_module(module_name)
            _call_register(getattr(module, "register", None), self, f"module {module_name!r}")


# The last answer of ``plugin_entry_points``, and the folders it was read from.
_FOUND: list[tuple[tuple[tuple[str, int], ...], tuple[EntryPoint, ...]]] = []


def _folders() -> tuple[tuple[str, int], ...]:
    """Each folder of ``sys.path`` with its modification time (-1: none there)."""
    found = []
    for path in sys.path:
        try:
            mtime = os.stat(path or ".").st_mtime_ns
        except OSError:
            mtime = -1
        found.append((path, mtime))
    return tuple(found)


def plugin_entry_points() -> tuple[EntryPoint, ...]:
    """The installed distributions' entry points in the ``seojobs.kinds`` group.

    Finding them reads the metadata of every distribution on ``sys.path`` (5 ms of CPU with a
    couple of hundred installed), and each app, worker and command that loads the registry
    asked again. They are read again only when ``sys.path`` or one of its folders changed:
    installing or removing a distribution adds or removes its ``.dist-info`` folder, which
    changes its parent's modification time (what importlib.metadata's own cache of each
    folder's listing goes by)."""
    folders = _folders()
    if _FOUND and _FOUND[0][0] == folders:
        return _FOUND[0][1]
    found = tuple(entry_points(group=ENTRY_POINT_GROUP))
    _FOUND[:] = [(folders, found)]
    return found


@functools.cache
def _schema(model: type[BaseModel]) -> Schema:
    return Schema(json_schema(model))


@functools.cache
def _schema_text(model: type[BaseModel], ref_template: str) -> str:
    return json.dumps(model.model_json_schema(ref_template=ref_template))


def json_schema(model: type[BaseModel], ref_template: str = DEFAULT_REF_TEMPLATE) -> dict[str, Any]:
    """``model.model_json_schema(ref_template=...)``, a fresh copy, the schema built once per
    model and template: pydantic builds it anew at each call (1 to 2 ms of CPU for some
    kinds' params), and ``GET /v1/job-types`` asked for every kind's at each request (21 ms
    for 21 kinds), each route document that takes a job type as often."""
    found: dict[str, Any] = json.loads(_schema_text(model, ref_template))
    return found


def _refuse_what_pydantic_takes(model: type[BaseModel], params: Any) -> None:
    """Refuse what the params' schema refuses and pydantic would take: fields the server
    fills in (``readOnly``), and values of a JSON type the schema does not admit that pydantic
    would convert (``true`` as 1, ``0`` as false, ``"5"`` as 5: :mod:`seojobs.jsontypes`)."""
    if not isinstance(params, dict):
        return  # the model's own validation refuses it
    errors: list[InitErrorDetails] = []
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra
        key = info.alias or name
        if isinstance(extra, dict) and extra.get("readOnly") is True and key in params:
            error = PydanticCustomError("read_only", "set by the server; a request cannot set it")
            errors.append({"type": error, "loc": (key,), "input": params[key]})
    refused = {error["loc"][0] for error in errors}
    for loc, why in _schema(model).coercions(params):
        if loc[0] not in refused:
            error = PydanticCustomError("json_type", why)
            errors.append({"type": error, "loc": loc, "input": value_at(params, loc)})
    if errors:
        raise ValidationError.from_exception_data(model.__name__, errors)


def _call_register(target: Any, registry: Registry, origin: str) -> None:
    if isinstance(target, Kind):
        registry.add(target)
    elif callable(target):
        target(registry)
    else:
        raise TypeError(f"{origin} must be a Kind or a register(registry) function")
