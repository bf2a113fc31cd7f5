"""Rows to typed records and typed records to the wire, by their fields' names.

Most records the engine hands out are a row with its columns renamed to nothing:
:func:`record_from_row` reads each field without a default from the column of
the same name, so a record lists its columns once (as its fields) and writes
out only what it converts.  The way out is the same: :func:`record_as_wire`
gives each field under its camelCase name, in the order of the fields, so a
record's ``as_wire`` / ``as_dict`` writes out only what it renames, leaves out
or converts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from pgqueue.db.executor import Row

__all__ = ["record_as_wire", "record_from_row"]

T = TypeVar("T")


def record_from_row(cls: type[T], row: Row, **computed: Any) -> T:
    """A ``cls`` whose fields without a default come from ``row``'s columns of their
    names; ``computed`` gives the fields read otherwise (converted, renamed, defaulted)."""
    names = _REQUIRED.get(cls)
    if names is None:
        names = _REQUIRED[cls] = _required(cls)
    read = {name: row[name] for name in names if name not in computed}
    return cls(**read, **computed)


_REQUIRED: dict[type[Any], tuple[str, ...]] = {}


def _required(cls: type[Any]) -> tuple[str, ...]:
    missing = dataclasses.MISSING
    return tuple(
        f.name
        for f in dataclasses.fields(cls)
        if f.default is missing and f.default_factory is missing
    )


def record_as_wire(
    record: Any,
    *,
    omit: tuple[str, ...] = (),
    names: Mapping[str, str] | None = None,
    **computed: Any,
) -> dict[str, Any]:
    """``record``'s fields (a dataclass) by their camelCase names, in field order;
    ``omit`` leaves fields out, ``names`` gives a field another wire name and
    ``computed`` a field's value given otherwise (converted, copied)."""
    fields = _WIRE_NAMES.get(type(record))
    if fields is None:
        fields = _WIRE_NAMES[type(record)] = _wire_names(type(record))
    names = names or {}
    return {
        names.get(name, camel): computed[name] if name in computed else getattr(record, name)
        for name, camel in fields
        if name not in omit
    }


_WIRE_NAMES: dict[type[Any], tuple[tuple[str, str], ...]] = {}


def _wire_names(cls: type[Any]) -> tuple[tuple[str, str], ...]:
    return tuple((f.name, _camel(f.name)) for f in dataclasses.fields(cls))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)
