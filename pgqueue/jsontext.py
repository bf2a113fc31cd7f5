"""The JSON text of what users store: one encoding for every transport, exact both ways.

Job data, results, progress values and stack traces are kept as the JSON text
they were encoded to (``json`` columns, not ``jsonb``), so they come back with
their keys in the order sent and their numbers as written.  This module is the
one home of the rules, shared by the engine (embedded transport, broker) and the
protocol (TCP):

- :func:`value_error` accepts JSON's own types only: ``str``, ``int``, finite
  ``float``, ``bool``, ``None``, lists/tuples, and maps with ``str`` keys
  (subclasses count as their base type, but Enum members do not).  A
  ``datetime``, ``UUID``, ``Decimal``, Enum member or dataclass is refused, on
  every transport with the same message, rather than silently turned into
  something else that would not come back as sent.
- Integers are exact at any size (``wide_ints``), or within 64 bits where
  msgpack carries them.
- :func:`dumps` and :func:`loads` are orjson with a fallback to the standard
  library for what orjson would change or refuse (integers beyond 64 bits).
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Sequence
from itertools import chain
from typing import Any, Final

import orjson

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "JSON_MAX_DEPTH",
    "NUL_PROBLEM",
    "dumps",
    "flat_values_ok",
    "loads",
    "value_error",
]

JSON_MAX_DEPTH: Final = 100
"""Deepest nesting of maps and arrays a stored value may have."""
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**64 - 1
"""The integers msgpack carries (int64 and uint64 formats)."""

NUL_PROBLEM: Final = "strings must not contain NUL (\\u0000)"
"""What :func:`value_error` says of a NUL character (kept out for ``jsonb`` casts)."""

_LONG_DIGITS: Final = re.compile(r"[0-9]{20}")
_LONG_DIGITS_BYTES: Final = re.compile(rb"[0-9]{20}")
"""orjson reads an integer of 20 digits or more as a float; such text goes to json."""


def value_error(
    value: object, max_depth: int = JSON_MAX_DEPTH, *, wide_ints: bool = True
) -> str | None:
    """Why ``value`` cannot be stored as JSON text, or None.

    Refused: binary, NaN and infinities, non-JSON values (``datetime``, ``UUID``,
    ``Decimal``, Enum members, dataclasses, ...), keys that are not strings, NUL in
    a string or key, maps and arrays nested deeper than ``max_depth`` and, unless
    ``wide_ints``, integers beyond 64 bits.  Walks one level at a time, so a deep
    value costs no stack.
    """
    level: list[object] = [value]
    depth = 0
    while level:
        below: list[object] = []
        nested = False
        for item in level:
            kind = type(item)
            if kind is not str and kind is not int and isinstance(item, enum.Enum):
                return f"{kind.__name__} values are not allowed"
            if isinstance(item, str):
                if "\x00" in item:
                    return NUL_PROBLEM
            elif item is None or isinstance(item, bool):
                continue
            elif isinstance(item, int):
                if not wide_ints and not INT64_MIN <= item <= INT64_MAX:
                    return "integers beyond 64 bits are not allowed"
            elif isinstance(item, float):
                if not math.isfinite(item):
                    return "NaN and Infinity are not allowed"
            elif isinstance(item, dict):
                nested = True
                for key in item:
                    if not isinstance(key, str) or isinstance(key, enum.Enum):
                        return "object keys must be strings"
                    if "\x00" in key:
                        return NUL_PROBLEM
                below.extend(item.values())
            elif isinstance(item, (list, tuple)):
                nested = True
                below.extend(item)
            elif isinstance(item, (bytes, bytearray, memoryview)):
                return "binary values are not allowed"
            else:
                return f"{kind.__name__} values are not allowed"
        if nested:
            depth += 1
            if depth > max_depth:
                return f"nested deeper than {max_depth} levels"
        level = below
    return None


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def flat_values_ok(values: Sequence[object], *, wide_ints: bool = True) -> bool:
    """Whether :func:`value_error` accepts every one of ``values``, judged for the
    whole sequence at once when each is a scalar of JSON's exact types or a ``dict``
    of ``str`` keys to such scalars (a bulk push's usual data; a few C-level passes
    instead of a walk per value).  False: some value has another shape, or is
    refused; ask :func:`value_error` of each."""
    maps = [v for v in values if type(v) is dict]
    items = [v for v in values if type(v) is not dict]
    items.extend(chain.from_iterable(map(dict.values, maps)))
    kinds = set(map(type, items))
    if not kinds <= _SCALARS:
        return False
    keys = list(chain.from_iterable(maps))
    if set(map(type, keys)) - {str} or "\x00" in "".join(keys):
        return False
    if str in kinds and "\x00" in "".join([v for v in items if type(v) is str]):
        return False
    if float in kinds and not all(map(math.isfinite, [v for v in items if type(v) is float])):
        return False
    if not wide_ints and int in kinds:
        ints = [v for v in items if type(v) is int]
        if min(ints) < INT64_MIN or max(ints) > INT64_MAX:
            return False
    return True


def dumps(value: Any) -> str:
    """Compact JSON text of a value that :func:`value_error` accepted.

    Raises ``ValueError`` or ``TypeError`` for what JSON cannot write (a lone
    surrogate, an integer beyond Python's digit limit).
    """
    try:
        return orjson.dumps(value).decode("utf-8")
    except (orjson.JSONEncodeError, RecursionError):
        pass  # integers beyond 64 bits, lone surrogates: the standard encoder decides
    text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    text.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate
    return text


def loads(text: str | bytes) -> Any:
    """The value of JSON text, integers exact at any size, keys in their order."""
    if isinstance(text, str):
        short = _LONG_DIGITS.search(text) is None
    else:
        short = _LONG_DIGITS_BYTES.search(text) is None
    if short:
        return orjson.loads(text)
    return json.loads(text)
