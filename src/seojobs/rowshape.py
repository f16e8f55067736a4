"""A table a kind owns, declared once as plain data: its row is a frozen dataclass.

The dataclass's fields are the table's columns in order and their annotations the column
types (``int``, ``str``, ``bool``, a ``list`` or ``dict`` stored as JSON; ``| None``: the
column may be null; ``Annotated[str, Length(n)]``: at most ``n`` characters). The kind names
its rows with it (the record its reads return), the store builds the SQLAlchemy table from it
(``seojobs.store.kindrows``), and no kind imports SQLAlchemy. Every such table has a
``job_id`` (its rows go with their job) that leads its primary key.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

R = TypeVar("R")
ColumnType = Literal["int", "str", "bool", "json"]
_SCALARS: dict[object, ColumnType] = {int: "int", str: "str", bool: "bool"}
_JSON = (list, dict)


@dataclass(frozen=True)
class Length:
    """``Annotated[str, Length(200)]``: a string column of at most 200 characters."""

    chars: int


@dataclass(frozen=True)
class ColumnShape:
    name: str
    type: ColumnType
    nullable: bool
    length: int | None = None  # str only; None: unbounded text


def _column(name: str, hint: Any) -> ColumnShape:
    length = None
    if typing.get_origin(hint) is typing.Annotated:
        hint, *extras = typing.get_args(hint)
        length = next((e.chars for e in extras if isinstance(e, Length)), None)
    nullable = False
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(members) < len(typing.get_args(hint))
        if len(members) != 1:
            raise TypeError(f"column {name}: one type, optionally | None, not {hint}")
        hint = members[0]
    if hint in _SCALARS:
        kind = _SCALARS[hint]
    elif hint in _JSON or typing.get_origin(hint) in _JSON:
        kind = "json"
    else:
        raise TypeError(f"column {name}: no column type for {hint}")
    if length is not None and kind != "str":
        raise TypeError(f"column {name}: Length applies to str columns only")
    return ColumnShape(name, kind, nullable, length)


@dataclass(frozen=True)
class KindTable(Generic[R]):
    """``name``: the table's; ``row``: a frozen dataclass whose first field is ``job_id``;
    ``key``: the columns after ``job_id`` that make a row unique within its job."""

    name: str
    row: type[R]
    key: tuple[str, ...]

    def __post_init__(self) -> None:
        names = self.names()
        if names[:1] != ("job_id",):
            raise ValueError(f"table {self.name}: the row's first field must be job_id")
        if missing := [k for k in self.key if k not in names]:
            raise ValueError(f"table {self.name}: key columns {missing} are not fields")
        self.columns()  # a type that has no column fails here, where the kind declares it

    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns())

    def columns(self) -> tuple[ColumnShape, ...]:
        hints = typing.get_type_hints(self.row, include_extras=True)
        fields = dataclasses.fields(self.row)  # type: ignore[arg-type]
        return tuple(_column(f.name, hints[f.name]) for f in fields)

    def record(self, values: Mapping[str, Any]) -> R:
        """A stored row (a mapping of every column) as the declared record."""
        return self.row(**values)
