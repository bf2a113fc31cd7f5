"""One pass every interval: the loop the reaper, the cron ticker, DLQ upkeep and
retention share.

A :class:`Periodic` service runs :meth:`~Periodic.pass_once` every ``interval_s``
seconds, either on every live broker (``leader_only = False``: a fenced broker
writes nothing, so it skips its passes) or only while this broker holds the
leader seat.  A pass that fails with a :class:`~pgqueue.errors.PgQueueError` is
logged and the next one runs on time; ``passes``, ``last_report`` and the
``done`` event say how far it got.  :meth:`~Periodic.stop` lets a pass in progress
finish, for up to :data:`STOP_GRACE_S`, before it cancels the service: a pass cut
mid-statement left its transaction open on a pooled connection for the pool to
reset (asyncpg reports that as an error).  Most passes take milliseconds; a long one
(retention working through a backlog) is still cancelled after the grace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import ClassVar, Generic, TypeVar

from pgqueue.errors import PgQueueError
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.manager.context import EngineContext
from pgqueue.service import Service

__all__ = ["STOP_GRACE_S", "Periodic"]

R = TypeVar("R")

STOP_GRACE_S = 1.0
"""How long :meth:`Periodic.stop` waits for a pass in progress before cancelling it."""


class Periodic(Service, Generic[R]):
    """Base class: give ``pass_once``, ``leader_only``, ``what`` and ``log``."""

    leader_only: ClassVar[bool] = True
    what: ClassVar[str] = "pass"
    """What one pass is called in the log line of a failed one."""
    log: ClassVar[logging.Logger] = logging.getLogger("pgqueue")

    def __init__(
        self, ctx: EngineContext, elector: LeaderElector, interval_ms: int, report: R
    ) -> None:
        super().__init__()
        self._ctx = ctx
        self._elector = elector
        self._interval = interval_ms / 1000
        self._per_minute = max(1, int(60_000 / interval_ms))
        self.passes = 0
        self.last_report = report
        self.done = asyncio.Event()
        self._between_passes = asyncio.Event()
        self._between_passes.set()

    async def pass_once(self) -> R:
        """One pass; its report becomes ``last_report``."""
        raise NotImplementedError

    def leaders_minute(self) -> bool:
        """Whether this broker leads and the pass now running is the first of a
        minute's (for upkeep the leader does once a minute)."""
        return self._elector.is_leader.is_set() and (self.passes + 1) % self._per_minute == 0

    async def run(self) -> None:
        self.started.set()
        while True:
            if self.leader_only:
                await self._elector.is_leader.wait()
            elif self._ctx.session.fenced.is_set():
                await asyncio.sleep(self._interval)  # a fenced broker writes nothing
                continue
            self._between_passes.clear()
            try:
                self.last_report = await self.pass_once()
                self.passes += 1
                self.done.set()
            except PgQueueError as exc:
                self.log.warning("%s failed: %s", self.what, exc)
            finally:
                self._between_passes.set()
            await asyncio.sleep(self._interval)

    async def stop(self) -> None:
        """Stop between passes: a pass in progress may finish first (its transaction
        commits or rolls back on its own), for up to :data:`STOP_GRACE_S`; then the
        service is cancelled (waiting for its next pass, or for the leader seat)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._between_passes.wait(), STOP_GRACE_S)
        await super().stop()
