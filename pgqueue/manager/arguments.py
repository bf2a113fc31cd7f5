"""Arguments of control operations: integers, bounds, tokens and texts, checked by field.

Pure functions, no I/O.  Each raises :class:`ValidationError` naming the
field (in the broker's wire spelling, e.g. ``delay``, ``timeout``) before
anything is written.
"""

from __future__ import annotations

import math
from typing import Any

from pgqueue.errors import ValidationError

__all__ = [
    "DAY_MS",
    "INT4_MAX",
    "MAX_INSTANT_MS",
    "MAX_TOKEN_LENGTH",
    "check_bool",
    "check_int",
    "check_text",
    "check_token",
]

DAY_MS = 86_400_000
INT4_MAX = 2**31 - 1
"""The largest value an ``integer`` column holds."""
MAX_INSTANT_MS = 8_640_000_000_000_000
"""The latest instant taken, in ms since the epoch (JavaScript's ``Date`` range; a
``timestamptz`` holds it)."""
MAX_TOKEN_LENGTH = 256


def check_int(value: Any, field: str, lo: int, hi: int) -> int:
    """An integer in ``lo..hi`` (a float with an integral value is accepted)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{field} must be a number", field=field)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{field} must be a finite number", field=field)
        if not value.is_integer():
            raise ValidationError(f"{field} must be an integer", field=field)
    number = int(value)
    if number < lo:
        raise ValidationError(f"{field} must be at least {lo}", field=field)
    if number > hi:
        raise ValidationError(f"{field} must be at most {hi}", field=field)
    return number


def check_bool(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{field} must be a boolean", field=field)
    return value


def check_text(value: Any, field: str, max_length: int, *, allow_empty: bool = True) -> str:
    """A string of at most ``max_length`` characters."""
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string", field=field)
    if not allow_empty and not value:
        raise ValidationError(f"{field} must not be empty", field=field)
    if len(value) > max_length:
        raise ValidationError(f"{field} too long (max {max_length} characters)", field=field)
    if "\x00" in value:
        raise ValidationError(f"{field} must not contain NUL characters", field=field)
    return value


def check_token(token: Any, field: str = "token") -> str:
    """A lock token as a worker presents it (its validity is the database's call)."""
    if not isinstance(token, str):
        raise ValidationError(f"{field} must be a string", field=field)
    if len(token) > MAX_TOKEN_LENGTH or "\x00" in token:
        raise ValidationError(f"{field} must be at most {MAX_TOKEN_LENGTH} characters", field=field)
    return token
