"""JSON out: the protocol's answer maps as HTTP bodies.

Integer map keys (``GetCountsPerPriority``) become strings; binary values
(which a msgpack client may have stored) become base64 text; integers beyond
64 bits are written exactly (by the standard library's encoder).
"""

from __future__ import annotations

import base64
import json
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
    try:
        return orjson.dumps(value, default=_fallback, option=_OPTIONS)
    except orjson.JSONEncodeError:
        pass  # an integer beyond 64 bits (stored exactly by an embedded client)
    text = json.dumps(value, default=_fallback, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")
