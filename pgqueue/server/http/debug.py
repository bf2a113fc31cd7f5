"""``POST /gc`` and ``GET /heapstats``: bunqueue's memory routes, for a Python broker.

bunqueue forces a JavaScriptCore collection and reports its heap.  What is
meaningful here:

* ``POST /gc`` runs :func:`gc.collect` over every generation, then hands freed
  arenas back to the system (glibc's ``malloc_trim``, where there is one), and
  answers ``{ok, before, after, collected, trimmed, gc, tracemalloc}``:
  ``before`` / ``after`` are ``{heapUsed, heapTotal, rss}`` in MB, as bunqueue's;
  ``collected`` the unreachable objects found.  A body ``{"tracemalloc": true}``
  starts :mod:`tracemalloc` (``false`` stops it): while it traces, ``heapUsed``
  / ``heapTotal`` are the traced current and peak bytes, and ``/heapstats``
  lists the lines that allocated most (``?top=N``, default 10, at most 200).
  Tracing slows the broker down; turn it off when done.
* ``GET /heapstats`` answers ``{ok, memory, heap: {objectCount, frozenCount,
  protectedCount, globalCount}, gc, collections, topObjectTypes, tracemalloc}``:
  the objects the collector tracks (``frozenCount`` of them frozen at start-up,
  ``pgqueue serve``'s ``gc.freeze``; by type, the 20 most common of the others), the modules
  loaded (``globalCount``), the counts of each GC generation and the sizes of
  this broker's in-memory books.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
import tracemalloc
from collections import Counter
from functools import cache
from typing import TYPE_CHECKING, Any

from pgqueue.server import overview

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost

__all__ = ["collect", "heap_stats", "set_tracing"]

TOP_TYPES = 20
TOP_LINES = 10
MAX_TOP_LINES = 200


@cache
def _malloc_trim() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None)
    except OSError:
        return None


def _tracing() -> dict[str, Any]:
    if not tracemalloc.is_tracing():
        return {"tracing": False}
    current, peak = tracemalloc.get_traced_memory()
    return {"tracing": True, "currentBytes": current, "peakBytes": peak}


def set_tracing(on: bool) -> None:
    """Start or stop :mod:`tracemalloc` (idempotent)."""
    if on and not tracemalloc.is_tracing():
        tracemalloc.start()
    elif not on and tracemalloc.is_tracing():
        tracemalloc.stop()


def _generations() -> dict[str, Any]:
    return {
        "counts": list(gc.get_count()),
        "thresholds": list(gc.get_threshold()),
        "generations": [
            {"collections": g["collections"], "collected": g["collected"]} for g in gc.get_stats()
        ],
    }


def collect() -> dict[str, Any]:
    """One full collection and trim (blocking: a few ms per 100k objects)."""
    before = overview.memory_mb()
    collected = gc.collect()
    trim = _malloc_trim()
    trimmed = bool(trim(0)) if trim is not None else False
    return {
        "ok": True,
        "before": before,
        "after": overview.memory_mb(),
        "collected": collected,
        "trimmed": trimmed,
        "gc": _generations(),
        "tracemalloc": _tracing(),
    }


def heap_stats(broker: BrokerHost, top: int = TOP_LINES) -> dict[str, Any]:
    """The tracked objects by type, GC generations, tracemalloc's ``top`` lines."""
    objects = gc.get_objects()
    by_type = Counter(type(obj).__name__ for obj in objects)
    tracing = _tracing()
    if tracemalloc.is_tracing():
        lines = tracemalloc.take_snapshot().statistics("lineno")[:top]
        tracing["top"] = [
            {"where": str(stat.traceback), "bytes": stat.size, "count": stat.count}
            for stat in lines
        ]
    answer = {
        "ok": True,
        "memory": overview.memory_mb(),
        "heap": {
            "objectCount": len(objects) + gc.get_freeze_count(),
            "frozenCount": gc.get_freeze_count(),
            "protectedCount": len(gc.garbage),
            "globalCount": len(sys.modules),
        },
        "gc": _generations(),
        "collections": overview.collections(broker),
        "topObjectTypes": [
            {"type": name, "count": count} for name, count in by_type.most_common(TOP_TYPES)
        ],
        "tracemalloc": tracing,
    }
    del objects
    return answer
