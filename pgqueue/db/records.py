"""Rows to typed records: a dataclass's fields read from the columns of their names.

Most records the engine hands out are a row with its columns renamed to nothing:
:func:`record_from_row` reads each field without a default from the column of
the same name, so a record lists its columns once (as its fields) and writes
out only what it converts.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from pgqueue.db.executor import Row

__all__ = ["record_from_row"]

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
