"""Tools for testing code that uses pgqueue, and for testing pgqueue itself.

- :func:`eventually` (:mod:`pgqueue.testing.waiting`) waits for a condition with a
  deadline instead of sleeping for a guessed duration.
- :mod:`pgqueue.testing.history` records what producers, workers and event
  subscribers saw (one JSON line per operation, with its outcome).
- :mod:`pgqueue.testing.workload` runs recording producers, workers and
  subscribers of the SDK against any deployment (``python -m pgqueue.testing.workload``).
- :mod:`pgqueue.testing.checker` reads those histories and the database and
  prints one headline line: lost, stale acks accepted, lease overlaps, ...
  (``python -m pgqueue.testing.checker``; docs/reliability.md).

Importing this package loads no driver: the submodules are imported on demand.
"""

from __future__ import annotations

from pgqueue.testing.waiting import eventually

__all__ = ["eventually"]
