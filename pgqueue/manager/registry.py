"""The queues a manager knows to be registered (their ``pgqueue_queues`` row exists).

Every push writes its queue's registry row (``INSERT ... ON CONFLICT DO NOTHING`` in
the insert statement): some 30 µs of server time on each sequential push, for a row
that is there from the first.  A manager remembers the queues its own autocommitted
pushes registered, and a later single push to one of them skips the row
(``job_insert_one_known``).

Only retention needs the row: ``finished_prune`` and the per-queue event trim walk the
registry (everything else reads it with a LEFT JOIN, or lists queues with a skip scan
too).  An obliterate deletes it under the cache: this manager's own obliterate forgets
the queue; another broker's is repaired by the next retention pass, which first
registers every queue that holds jobs (``queue_register_held``), as it repairs a push
that raced an obliterate (its job survived, its row did not), cache or not.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from pgqueue.manager.context import EngineContext

__all__ = ["MAX_REMEMBERED", "forget_registered", "remember_registered"]

MAX_REMEMBERED: Final = 10_000
"""More queues than this remembered: start again (memory stays bounded)."""


def remember_registered(ctx: EngineContext, queues: Collection[str]) -> None:
    """``queues``' rows were written by a committed push of this manager."""
    known = ctx.registered_queues
    if len(known) + len(queues) > MAX_REMEMBERED:
        known.clear()
    known.update(queues)


def forget_registered(ctx: EngineContext, queue: str) -> None:
    """``queue``'s row may be gone (this manager obliterated it)."""
    ctx.registered_queues.discard(queue)
