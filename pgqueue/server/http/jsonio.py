"""JSON out: the protocol's answer maps as HTTP bodies.

Integer map keys (``GetCountsPerPriority``) become strings; binary values
(which a msgpack client may have stored) become base64 text.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

__all__ = ["dumps"]

_OPTIONS = orjson.OPT_NON_STR_KEYS


def _fallback(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def dumps(value: Any) -> bytes:
    """``value`` as JSON bytes (raises ``TypeError`` for what JSON cannot carry)."""
    return orjson.dumps(value, default=_fallback, option=_OPTIONS)
