"""Vacuum of the jobs table on the leader once it has drained.

Every job leaves two dead versions in ``pgqueue_jobs``: its pending row once claimed
(the claim is never a HOT update) and its active row once finished (moved to
``pgqueue_finished``).  The claims' reads prune the pages they visit, but only a VACUUM
returns the space, and a drained queue leaves its whole heap behind until autovacuum
comes by, which visits a database at most once per ``autovacuum_naptime`` (a minute by
default; the table's own autovacuum settings take over for a table that stays busy).

Every ``vacuum_interval_ms`` the leader reads the table's dead and live tuple counts
from the statistics (one cheap statement) and runs ``VACUUM (SKIP_LOCKED)
pgqueue_jobs`` once the table has drained: at least ``vacuum_min_dead`` dead tuples and
``vacuum_dead_ratio`` times more dead than live ones.  The VACUUM cleans the indexes and
returns the empty pages at the table's end to the file system.  It runs outside any
transaction on one pooled connection and takes no lock a push, claim or ack waits for,
but its truncation takes an ACCESS EXCLUSIVE lock (only when nobody holds the table,
given up as soon as anyone waits) and an xid (which holds back the snapshots' xmin, the
outbox readers' horizon, while it lasts): hence only for a drained table, never a busy
one.  SKIP_LOCKED skips the pass when autovacuum or a schema change holds the table.
Rate limit: after a VACUUM that took *d*, the next one waits at least ``9 * d`` (at most
a tenth of the time vacuuming), and so does the next after one that failed (a VACUUM
that ``statement_timeout`` cut short is not retried every interval; autovacuum, which
has no timeout, remains).  A role that may not vacuum the table (not its owner) never
tries.  ``vacuum_jobs = False`` turns it off (autovacuum alone then).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from pgqueue.db.queries import Q
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.maintenance.periodic import Periodic
from pgqueue.manager.context import EngineContext

__all__ = ["DUTY_WAIT", "JobsVacuum", "VacuumReport", "vacuum_due", "vacuum_jobs_once"]

log = logging.getLogger("pgqueue.vacuum")

DUTY_WAIT = 9
"""After a VACUUM that took *d* seconds, the next waits at least ``DUTY_WAIT * d``."""


@dataclass(slots=True)
class VacuumReport:
    dead: int = 0
    live: int = 0
    vacuumed: bool = False
    seconds: float = 0.0


def vacuum_due(dead: int, live: int, min_dead: int, dead_ratio: int) -> bool:
    """Whether a table with ``dead`` and ``live`` tuples has drained enough for a VACUUM."""
    return dead >= min_dead and dead >= dead_ratio * live


async def vacuum_jobs_once(
    ctx: EngineContext, *, force: bool = False, clock: Callable[[], float] = time.monotonic
) -> VacuumReport:
    """Read the jobs table's tuple counts and VACUUM it when due (or ``force``)."""
    row = await ctx.db.fetchrow(Q.jobs_vacuum_stats)
    assert row is not None
    config = ctx.config
    report = VacuumReport(dead=int(row["dead"]), live=int(row["live"]))
    if not row["may_vacuum"]:
        return report
    if force or vacuum_due(
        report.dead, report.live, config.vacuum_min_dead, config.vacuum_dead_ratio
    ):
        started = clock()
        await ctx.db.execute(Q.jobs_vacuum)
        report.vacuumed = True
        report.seconds = clock() - started
    return report


class JobsVacuum(Periodic[VacuumReport]):
    """Runs :func:`vacuum_jobs_once` every ``vacuum_interval_ms`` while this broker
    leads, at most a tenth of the time vacuuming; ``vacuums`` counts the VACUUMs run."""

    name = "jobs-vacuum"
    what = "jobs vacuum"
    log = log

    def __init__(
        self,
        ctx: EngineContext,
        elector: LeaderElector,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(ctx, elector, ctx.config.vacuum_interval_ms, VacuumReport())
        self.vacuums = 0
        self._clock = clock
        self._not_before = 0.0

    async def pass_once(self) -> VacuumReport:
        if not self._ctx.config.vacuum_jobs or self._clock() < self._not_before:
            return VacuumReport()
        started = self._clock()
        try:
            report = await vacuum_jobs_once(self._ctx, clock=self._clock)
        except BaseException:
            # A VACUUM cut short (statement_timeout on a huge table, a cancel) is
            # rate-limited by the time it took too: no retry every interval.
            self._not_before = self._clock() + DUTY_WAIT * (self._clock() - started)
            raise
        if report.vacuumed:
            self.vacuums += 1
            self._not_before = self._clock() + DUTY_WAIT * report.seconds
            log.debug(
                "vacuumed pgqueue_jobs (%d dead, %d live) in %.3f s",
                report.dead,
                report.live,
                report.seconds,
            )
        return report
