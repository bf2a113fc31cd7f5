"""A history of what clients saw: one JSON line per operation, per process.

Every producer, worker and event subscriber of a test run appends to its own
file (``<dir>/<process>.jsonl``); the checker (:mod:`pgqueue.testing.checker`)
merges them and compares them with the database.  Lines are written with one
``write`` each and flushed at once, so a process killed with SIGKILL loses
nothing it recorded.

Records (``kind``), as in Jepsen's client model: an operation's ``type`` is
``invoke`` (sent), ``ok`` (the broker confirmed it), ``fail`` (the broker
refused it: nothing was written) or ``info`` (unknown: a timeout, a cut
connection, a commit of unknown outcome).

- ``enqueue``: ``cid`` (the job's custom id), ``type``, ``job_id`` on ok, ``error``.
- ``exec``: a handler began a job: ``job_id``, ``cid``, ``fence``, ``exec`` (a
  fresh id, also put in the job's result), ``attempt``.
- ``ack``: the worker learnt its completion's outcome: ``type`` ``ok`` or
  ``rejected`` (the claim had moved on), ``job_id``, ``fence``, ``exec``.
- ``fail``: the same for a handler's failure.
- ``subscribed`` / ``event`` / ``unsubscribed``: an event subscriber
  (``subscriber``, ``queue``; an event's ``job_id``, ``event``, ``seq`` (its outbox id),
  ``ts`` (its database timestamp, ms)).
- ``nemesis``: a fault: ``f`` (``kill``, ``stop``, ``pg-restart``, ``proxy-cut``, ...),
  ``target``, ``phase`` (``start`` / ``end``).

Every record carries ``process``, ``t`` (wall clock, seconds) and ``m`` (this
process's monotonic clock).  Safety verdicts never rely on cross-process order:
they rely on what the database says.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

__all__ = ["HistoryWriter", "OpType", "Record", "read_history"]

OpType = Literal["invoke", "ok", "fail", "info", "rejected"]
Record = dict[str, Any]


class HistoryWriter:
    """Appends records to ``<directory>/<process>.jsonl`` (thread-safe)."""

    def __init__(self, directory: str | Path, process: str) -> None:
        self.process = process
        self.path = Path(directory) / f"{process}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()

    def write(self, kind: str, **fields: Any) -> Record:
        """Append one record; returns it."""
        record: Record = {"kind": kind, "process": self.process, "t": time.time()}
        record["m"] = time.monotonic()
        record.update(fields)
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
        return record

    def nemesis(self, f: str, target: str, phase: Literal["start", "end"] = "start") -> None:
        """Record a fault (``phase`` start, and end for one that lasts)."""
        self.write("nemesis", f=f, target=target, phase=phase)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lines(path: Path) -> Iterator[Record]:
    with path.open() as source:
        for line in source:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill at the very end of a file
            if isinstance(record, dict):
                yield record


def read_history(sources: Iterable[str | Path]) -> list[Record]:
    """Every record of the given files or directories (``*.jsonl``), by wall time."""
    records: list[Record] = []
    for source in sources:
        path = Path(source)
        paths = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
        for one in paths:
            records.extend(_lines(one))
    records.sort(key=lambda r: float(r.get("t", 0.0)))
    return records
