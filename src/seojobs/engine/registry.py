"""The kind registry: a kind is a params model plus an async handler, found by name.

Kinds come from three places: the built-in ones (``seojobs.kinds``), installed plug-ins that
declare an entry point in the ``seojobs.kinds`` group, and modules named in the
``SEOJOBS_PLUGINS`` setting. An entry point or plug-in module exposes ``register(registry)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

if TYPE_CHECKING:
    from seojobs.engine.context import JobContext

ENTRY_POINT_GROUP = "seojobs.kinds"

Handler = Callable[["JobContext"], Awaitable[None]]


@dataclass(frozen=True)
class Kind:
    name: str
    params: type[BaseModel]
    handler: Handler
    # The per-item inputs of a job (URLs, pages) derived from its validated params, stored as
    # item rows when the job is created. None for kinds without items.
    items: Callable[[Any], Sequence[str]] | None = None
    description: str = ""
    # Small params that status reads need; the rest (e.g. 10,000 URLs) stays unread there.
    summary_params: tuple[str, ...] = ()


class UnknownKind(LookupError):
    def __init__(self, name: str, known: Iterable[str]) -> None:
        super().__init__(f"unknown job kind {name!r}; known kinds: {', '.join(sorted(known))}")
        self.name = name


class InvalidParams(ValueError):
    """Params failed validation; ``errors`` name each field (pydantic's ``loc``)."""

    def __init__(self, kind: str, error: ValidationError) -> None:
        self.kind = kind
        self.errors: list[dict[str, Any]] = [
            {"field": ".".join(str(p) for p in e["loc"]) or "params", "message": e["msg"]}
            for e in error.errors()
        ]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in self.errors)
        super().__init__(f"invalid params for {kind}: {detail}")


class Registry:
    def __init__(self) -> None:
        self._kinds: dict[str, Kind] = {}

    def add(self, kind: Kind) -> Kind:
        if kind.name in self._kinds and self._kinds[kind.name] is not kind:
            raise ValueError(f"job kind {kind.name!r} is registered twice")
        self._kinds[kind.name] = kind
        return kind

    def kind(
        self,
        name: str,
        params: type[BaseModel],
        *,
        items: Callable[[Any], Sequence[str]] | None = None,
        description: str = "",
    ) -> Callable[[Handler], Handler]:
        """Decorator form of :meth:`add`."""

        def decorate(handler: Handler) -> Handler:
            self.add(Kind(name, params, handler, items, description))
            return handler

        return decorate

    def get(self, name: str) -> Kind:
        try:
            return self._kinds[name]
        except KeyError:
            raise UnknownKind(name, self._kinds) from None

    def summary_keys(self) -> tuple[str, ...]:
        return tuple(sorted({key for kind in self._kinds.values() for key in kind.summary_params}))

    def names(self) -> list[str]:
        return sorted(self._kinds)

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def validate(self, name: str, params: dict[str, Any]) -> tuple[BaseModel, list[str]]:
        """Validate new params for a kind (a request's, never stored ones); returns the model
        and the item inputs. Fields the kind marks ``readOnly`` in its schema are its own to
        fill in (e.g. ``duplicates_removed``): params that set one are refused."""
        kind = self.get(name)
        try:
            _refuse_read_only(kind.params, params)
            model = kind.params.model_validate(params)
        except ValidationError as exc:
            raise InvalidParams(name, exc) from None
        inputs = list(kind.items(model)) if kind.items else []
        return model, inputs

    def load_plugins(self, modules: Iterable[str] = ()) -> None:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            _call_register(ep.load(), self, f"entry point {ep.name!r}")
        for module_name in modules:
            module = importlib.import_module(module_name)
            _call_register(getattr(module, "register", None), self, f"module {module_name!r}")


def _refuse_read_only(model: type[BaseModel], params: Any) -> None:
    if not isinstance(params, dict):
        return  # the model's own validation refuses it
    errors: list[InitErrorDetails] = []
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra
        key = field.alias or name
        if isinstance(extra, dict) and extra.get("readOnly") is True and key in params:
            error = PydanticCustomError("read_only", "set by the server; a request cannot set it")
            errors.append({"type": error, "loc": (key,), "input": params[key]})
    if errors:
        raise ValidationError.from_exception_data(model.__name__, errors)


def _call_register(target: Any, registry: Registry, origin: str) -> None:
    if isinstance(target, Kind):
        registry.add(target)
    elif callable(target):
        target(registry)
    else:
        raise TypeError(f"{origin} must be a Kind or a register(registry) function")
