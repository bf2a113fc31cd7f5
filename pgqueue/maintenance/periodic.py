"""One pass every interval: the loop the reaper, the cron ticker, DLQ upkeep and
retention share.

A :class:`Periodic` service runs :meth:`~Periodic.pass_once` every ``interval_s``
seconds, either on every live broker (``leader_only = False``: a fenced broker
writes nothing, so it skips its passes) or only while this broker holds the
leader seat.  A pass that fails with a :class:`~pgqueue.errors.PgQueueError` is
logged and the next one runs on time; ``passes``, ``last_report`` and the
``done`` event say how far it got.
"""

from __future__ import annotations

import asyncio
import logging
from typing import ClassVar, Generic, TypeVar

from pgqueue.errors import PgQueueError
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.manager.context import EngineContext
from pgqueue.service import Service

__all__ = ["Periodic"]

R = TypeVar("R")


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
            try:
                self.last_report = await self.pass_once()
                self.passes += 1
                self.done.set()
            except PgQueueError as exc:
                self.log.warning("%s failed: %s", self.what, exc)
            await asyncio.sleep(self._interval)
