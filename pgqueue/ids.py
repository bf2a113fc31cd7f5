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


def _stamps(count: int) -> list[tuple[int, int, int]]:
    """``count`` stamps of :func:`_next_stamp` taken at once: runs of (ms, first
    counter, how many), each run's counters consecutive."""
    global _last_ms, _counter
    now_ms = time.time_ns() // 1_000_000
    runs: list[tuple[int, int, int]] = []
    with _lock:
        if now_ms > _last_ms:
            _last_ms = now_ms
            _counter = (int.from_bytes(os.urandom(2), "big") & 0x3FF) - 1
        while count:
            start = _counter + 1
            if start > _COUNTER_MAX:
                _last_ms += 1
                start = 0
            taken = min(count, _COUNTER_MAX + 1 - start)
            runs.append((_last_ms, start, taken))
            _counter = start + taken - 1
            count -= taken
    return runs


_VARIANT = dict(zip("0123456789abcdef", "89ab89ab89ab89ab", strict=True))
"""The first hex digit of the variant group: ``10`` then the random digit's low 2 bits."""


def uuid7_many(count: int) -> list[str]:
    """``count`` new UUIDv7 strings in increasing order (the same ids as ``count``
    calls of :func:`uuid7`, formatted from one random block: one lock, no int per id)."""
    rand = os.urandom(8 * count).hex()
    out: list[str] = []
    at = 0
    variant = _VARIANT
    for ms, start, taken in _stamps(count):
        h = f"{ms & 0xFFFF_FFFF_FFFF:012x}"
        head = f"{h[:8]}-{h[8:]}-7"
        for counter in range(start, start + taken):
            r = rand[at : at + 16]
            at += 16
            out.append(f"{head}{counter:03x}-{variant[r[0]]}{r[1:4]}-{r[4:]}")
    return out
