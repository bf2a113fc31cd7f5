"""The one check of integers, durations and numbers, with bunqueue's words.

Each ``…_fault`` function returns what is wrong with a value as the tail of a
message (``must be at most 1000``), or None when it is fine, so every front end
words it its own way (the wire reader puts its prefix and path before it, the
engine its field name).  :func:`check_integer` and :func:`check_number` raise
:class:`~pgqueue.errors.ValidationError` with ``<label> <fault>`` directly.

JavaScript sends every number as a float64, so an integral float (``3.0``,
``1e3``) counts as an integer unless ``floats=False`` (a Python API that takes
``int`` only).
"""

from __future__ import annotations

import math
from typing import Final

from pgqueue.errors import ValidationError

__all__ = [
    "DAY_MS",
    "INT4_MAX",
    "MAX_EPOCH_MS",
    "YEAR_MS",
    "check_bool",
    "check_integer",
    "check_number",
    "integer_fault",
    "js_number",
    "number_fault",
]

DAY_MS: Final = 86_400_000
YEAR_MS: Final = 365 * DAY_MS
MAX_EPOCH_MS: Final = 8_640_000_000_000_000
INT4_MAX: Final = 2**31 - 1
"""The largest value an ``integer`` column holds."""
"""The latest instant JavaScript's ``Date`` holds, in ms since the epoch."""


def js_number(value: float) -> str:
    """A bound as JavaScript prints it: ``60000``, not ``60000.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _bounds_fault(number: float, lo: float, hi: float) -> str | None:
    if number < lo:
        return f"must be at least {js_number(lo)}"
    if number > hi:
        return f"must be at most {js_number(hi)}"
    return None


def number_fault(value: object, lo: float = -math.inf, hi: float = math.inf) -> str | None:
    """Why ``value`` is not a finite number in ``lo..hi`` (booleans are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number"
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    return _bounds_fault(value, lo, hi)


def integer_fault(value: object, lo: float, hi: float, *, floats: bool = True) -> str | None:
    """Why ``value`` is not an integer in ``lo..hi``; ``floats``: an integral float counts."""
    if not floats:
        if isinstance(value, bool) or not isinstance(value, int):
            return "must be an integer"
        return _bounds_fault(value, lo, hi)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "must be a finite number"
        if not value.is_integer():
            return "must be an integer"
    return _bounds_fault(value, lo, hi)


def check_integer(
    value: object, field: str, lo: float, hi: float, *, floats: bool = True, label: str = ""
) -> int:
    """``value`` as an ``int`` in ``lo..hi``, or :class:`ValidationError` naming ``field``.

    ``label`` is the name the message uses when it is not ``field``.
    """
    fault = integer_fault(value, lo, hi, floats=floats)
    if fault is not None:
        raise ValidationError(f"{label or field} {fault}", field=field)
    assert isinstance(value, int | float)
    return int(value)


def check_number(
    value: object, field: str, lo: float = -math.inf, hi: float = math.inf, *, label: str = ""
) -> float:
    """``value`` as a finite number in ``lo..hi`` (returned as sent)."""
    fault = number_fault(value, lo, hi)
    if fault is not None:
        raise ValidationError(f"{label or field} {fault}", field=field)
    assert isinstance(value, int | float)
    return value


def check_bool(value: object, field: str, *, label: str = "") -> bool:
    """``true`` or ``false``; ``1`` and ``"true"`` are refused."""
    if not isinstance(value, bool):
        raise ValidationError(f"{label or field} must be a boolean", field=field)
    return value
