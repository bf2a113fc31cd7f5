"""UUIDv7 job ids (RFC 9562), monotonic within a process.

Job ids are text, like bunqueue's.  A UUIDv7 sorts by creation time, so ids
generated for one batch keep their input order, which the claim uses as its
FIFO tie-break.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["uuid7", "uuid7_many"]

_lock = threading.Lock()
_last_ms = 0
_counter = 0
_COUNTER_MAX = 0xFFF


def _next_stamp() -> tuple[int, int]:
    global _last_ms, _counter
    now_ms = time.time_ns() // 1_000_000
    with _lock:
        if now_ms > _last_ms:
            _last_ms = now_ms
            _counter = int.from_bytes(os.urandom(2), "big") & 0x3FF
        else:
            _counter += 1
            if _counter > _COUNTER_MAX:
                _last_ms += 1
                _counter = 0
        return _last_ms, _counter


def _format(ms: int, counter: int, rand: bytes) -> str:
    value = (ms & 0xFFFF_FFFF_FFFF) << 80
    value |= 0x7 << 76
    value |= counter << 64
    value |= 0b10 << 62
    value |= int.from_bytes(rand, "big") & 0x3FFF_FFFF_FFFF_FFFF
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid7() -> str:
    """One new UUIDv7 string, greater than every id this process made before."""
    ms, counter = _next_stamp()
    return _format(ms, counter, os.urandom(8))


def uuid7_many(count: int) -> list[str]:
    """``count`` new UUIDv7 strings in increasing order."""
    rand = os.urandom(8 * count)
    out = []
    for i in range(count):
        ms, counter = _next_stamp()
        out.append(_format(ms, counter, rand[8 * i : 8 * i + 8]))
    return out
