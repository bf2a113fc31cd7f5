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
from typing import Any, Final

import orjson

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "JSON_MAX_DEPTH",
    "NUL_PROBLEM",
    "dumps",
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
    pattern = _LONG_DIGITS if isinstance(text, str) else _LONG_DIGITS_BYTES
    if pattern.search(text) is None:  # type: ignore[arg-type]
        return orjson.loads(text)
    return json.loads(text)
