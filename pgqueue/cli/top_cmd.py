"""``pgqueue top``: a live table of the queues, driven by their event streams.

Each queue gets one event subscription (:class:`~pgqueue.client.QueueEvents`);
its counts start from one snapshot and then move with every event
(:mod:`pgqueue.cli.top_model`), so a quiet cluster costs nothing.  Queues are
discovered with one ``ListQueues`` every ``--discover-s``; a queue's counts are
read again after a bulk change (drain, clean, obliterate, a gap in its
events) and every ``--resync-s`` against drift.  The alert figures (age of the
oldest waiting job and of the oldest in retry, the DLQ by reason, worker slots
busy against registered, active jobs against the concurrency limit, rate-limit
throttling) are read with one ``AlertFigures`` every 2 s at most.  Ctrl-C ends it.  ``--json``
prints one JSON line per refresh instead (for scripts; ``--frames`` bounds it).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click
import orjson
from rich.live import Live
from rich.table import Table

from pgqueue.cli.common import shown_option
from pgqueue.cli.operator import Target, connection_options
from pgqueue.cli.render import RATE_COLUMNS, duration, out, table
from pgqueue.cli.top_model import QueueTop
from pgqueue.client import Admin, QueueEvents

__all__ = ["register"]

COLUMNS = [
    "queue",
    "state",
    "waiting",
    "delayed",
    "active",
    "completed",
    "failed",
    *RATE_COLUMNS,
    "oldest wait",
    "oldest retry",
    "dlq",
    "slots busy",
    "active/limit",
]

FIGURE_KEYS = (
    "oldestWaitingMs",
    "oldestRetryMs",
    "dlq",
    "dlqTotal",
    "concurrencyLimit",
    "workerSlots",
    "workerSlotsBusy",
    "rateLimited",
    "rateThrottled",
)
FIGURES_EVERY_S = 2.0  # AlertFigures is one set-based statement: read it every 2 s at most


def _figure_cells(f: dict[str, Any] | None) -> list[str]:
    """The alert columns of one queue ("-": not read yet; a limit of none shows as -)."""
    if f is None:
        return ["-"] * 5
    limit = f.get("concurrencyLimit")
    reasons = ", ".join(f"{r} {n}" for r, n in sorted((f.get("dlq") or {}).items()))
    return [
        duration(f.get("oldestWaitingMs")),
        duration(f.get("oldestRetryMs")),
        f"{f.get('dlqTotal', 0)}" + (f" ({reasons})" if reasons else ""),
        f"{f.get('workerSlotsBusy', 0)}/{f.get('workerSlots', 0)}",
        f"{f.get('active', 0)}/{'-' if limit is None else limit}"
        + (f" throttled {f.get('rateThrottled', 0)}" if f.get("rateThrottled") else "")
        + (" (window full)" if f.get("rateLimited") else ""),
    ]


class Top:
    """The subscriptions and the rows; :meth:`run` until ``frames`` or Ctrl-C."""

    def __init__(self, admin: Admin, *, window_s: float, resync_s: float) -> None:
        self.admin = admin
        self.window_s = window_s
        self.resync_s = resync_s
        self.rows: dict[str, QueueTop] = {}
        self._synced_at: dict[str, float] = {}
        self._streams: dict[str, QueueEvents] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.figures: dict[str, dict[str, Any]] = {}
        self._figures_at = 0.0

    async def discover(self) -> None:
        for name in await self.admin.get_queues():
            if name not in self.rows:
                await self._watch(name)

    async def _watch(self, name: str) -> None:
        row = QueueTop(name, window_s=self.window_s)
        self.rows[name] = row
        events = QueueEvents(name, await self.admin.transport(), autorun=False)
        self._streams[name] = events
        stream = aiter(events)
        self._tasks.append(asyncio.create_task(self._follow(row, stream)))
        with contextlib.suppress(TimeoutError):
            await events.wait_until_ready(timeout=10)
        await self._snapshot(name)

    async def _follow(self, row: QueueTop, stream: Any) -> None:
        async for event in stream:
            row.apply(event.event, event.job_id, event.timestamp, event.data, time.monotonic())

    async def _snapshot(self, name: str) -> None:
        queue = await self.admin.queue(name)
        counts = await queue.get_counts()
        self.rows[name].reset(counts, bool(counts.get("paused")))
        self._synced_at[name] = time.monotonic()

    async def refresh_figures(self) -> None:
        now = time.monotonic()
        if now - self._figures_at < FIGURES_EVERY_S:
            return
        self._figures_at = now
        self.figures = {f["queue"]: f for f in await self.admin.get_alert_figures()}

    async def refresh_stale(self) -> None:
        await self.refresh_figures()
        now = time.monotonic()
        for name, row in self.rows.items():
            if row.stale or now - self._synced_at.get(name, 0) >= self.resync_s:
                await self._snapshot(name)

    def snapshot(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        rows = []
        for name in sorted(self.rows):
            row = self.rows[name].row(now)
            f = self.figures.get(name)
            if f is not None:
                for key in FIGURE_KEYS:
                    row[key] = f.get(key)
            rows.append(row)
        return rows

    def render(self) -> Table:
        rows = []
        for r in self.snapshot():
            rows.append(
                [
                    r["queue"],
                    "paused" if r["paused"] else "",
                    r["waiting"],
                    r["delayed"],
                    r["active"],
                    r["completed"],
                    r["failed"],
                    f"{r['inPerSec']:.1f}",
                    f"{r['donePerSec']:.1f}",
                    f"{r['failPerSec']:.1f}",
                    duration(r["waitP50Ms"]),
                    duration(r["waitP95Ms"]),
                    duration(r["runP50Ms"]),
                    duration(r["runP95Ms"]),
                    *_figure_cells(self.figures.get(r["queue"])),
                ]
            )
        title = (
            f"pgqueue top — {len(rows)} queue(s), rates over {self.window_s:g}s, "
            f"{time.strftime('%H:%M:%S')} (Ctrl-C to quit)"
        )
        return table(COLUMNS, rows, title=title)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for events in self._streams.values():
            await events.close()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _run(
    target: Target,
    interval_s: float,
    window_s: float,
    discover_s: float,
    resync_s: float,
    frames: int,
    as_json: bool,
) -> None:
    admin = target.admin()
    top = Top(admin, window_s=window_s, resync_s=resync_s)
    try:
        await top.discover()
        discovered_at = time.monotonic()
        shown = 0
        live = None if as_json else Live(top.render(), console=out, auto_refresh=False)
        with live if live is not None else contextlib.nullcontext():
            while frames == 0 or shown < frames:
                if shown:
                    await asyncio.sleep(interval_s)  # the refresh rate of the screen
                if time.monotonic() - discovered_at >= discover_s:
                    await top.discover()
                    discovered_at = time.monotonic()
                await top.refresh_stale()
                if live is not None:
                    live.update(top.render(), refresh=True)
                else:
                    line = orjson.dumps({"at": time.time() * 1000, "queues": top.snapshot()})
                    sys.stdout.write(line.decode() + "\n")
                    sys.stdout.flush()
                shown += 1
    finally:
        await top.close()
        await admin.close()


F = TypeVar("F", bound=Callable[..., Any])


def _seconds(
    flag: str, least: float, default: float, help: str, dest: str = ""
) -> Callable[[F], F]:
    """A duration option in seconds, at least ``least``."""
    names = (dest,) if dest else ()
    return shown_option(flag, *names, type=click.FloatRange(min=least), default=default, help=help)


@click.command("top")
@_seconds("--interval", 0.1, 1.0, "seconds between screen refreshes", "interval_s")
@_seconds("--window", 1, 10.0, "seconds of events the rates are averaged over", "window_s")
@_seconds("--discover-s", 0.5, 5.0, "seconds between looks for new queues (one ListQueues)")
@_seconds("--resync-s", 1, 30.0, "seconds between re-reads of each queue's counts (against drift)")
@shown_option(
    "--frames",
    type=click.IntRange(min=0),
    default=0,
    help="stop after this many refreshes (0: until Ctrl-C)",
)
@click.option("--json", "as_json", is_flag=True, default=False, help="one JSON line per refresh")
@connection_options
def top(**options: Any) -> None:
    """A live table of every queue: counts, rates and latencies, from the event streams."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_run(**options))  # the options, by name, as _run takes them


def register(group: click.Group) -> None:
    group.add_command(top)
