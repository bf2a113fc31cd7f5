"""Arguments of control operations: tokens and texts, checked by field.

Integers and booleans are checked by :mod:`pgqueue.vocabulary.checks` (re-exported
here as ``check_int`` / ``check_bool`` for the flows that read their arguments).

Pure functions, no I/O.  Each raises :class:`ValidationError` naming the
field (in the broker's wire spelling, e.g. ``delay``, ``timeout``) before
anything is written.
"""

from __future__ import annotations

from typing import Any

from pgqueue.errors import ValidationError
from pgqueue.vocabulary.checks import DAY_MS, INT4_MAX, check_bool, check_integer

__all__ = [
    "DAY_MS",
    "INT4_MAX",
    "MAX_TOKEN_LENGTH",
    "check_bool",
    "check_int",
    "check_text",
    "check_token",
]

MAX_TOKEN_LENGTH = 256

check_int = check_integer
"""The one integer check (:func:`pgqueue.vocabulary.checks.check_integer`)."""


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
