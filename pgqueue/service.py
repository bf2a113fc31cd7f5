"""One lifecycle for every long-lived component: ``start()``, ``stop()``, ``started``.

A :class:`Service` runs one background task, and supervises it:

* ``run()`` failing *before* it set ``started`` fails ``start()`` with that
  error (a broker that cannot take its id, a schema it cannot read): nothing
  is retried behind the caller's back, and nothing is logged as a crash;
* ``run()`` failing *after* it started (a driver error nobody mapped, a bug) is
  logged, counted in ``restarts`` and run again after a backoff (doubling from
  ``restart_delay_s`` to ``restart_delay_max_s``, with jitter; back to the
  minimum after ``restart_reset_s`` of healthy running).  ``run()`` is
  called again on the same object, so it must not redo one-time setup (check
  ``started``).

``state`` is what health checks and metrics read: ``starting``, ``running``,
``restarting`` (waiting out the backoff), ``ended`` (``run()`` returned),
``failed`` (it failed before starting) or ``stopped``.  ``failure`` keeps the
last error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Iterable
from typing import Any, Literal

__all__ = ["Service", "ServiceState", "stop_together"]

log = logging.getLogger("pgqueue")

ServiceState = Literal["starting", "running", "restarting", "ended", "failed", "stopped"]


class Service:
    """Base class: override :meth:`run`; it should set ``self.started`` when ready."""

    name = "service"
    restart_delay_s = 0.1
    restart_delay_max_s = 5.0
    restart_reset_s = 30.0

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()
        self.failure: BaseException | None = None
        self.restarts = 0
        self._restarting = False
        self._ended = False
        self._task: asyncio.Task[Any] | None = None

    async def run(self) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        """Start the task and wait until it reports ``started`` (or dies trying)."""
        if self._task is not None:
            return
        self.stopped.clear()
        self._ended = False
        self._task = asyncio.create_task(self._main(), name=f"pgqueue:{self.name}")
        started = asyncio.create_task(self.started.wait())
        try:
            done, _ = await asyncio.wait({started, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            started.cancel()  # no waiter left behind, even when this start is cancelled
        if started not in done:
            self._task.result()

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        delay = self.restart_delay_s
        try:
            while True:
                began = loop.time()
                try:
                    await self.run()
                    self._ended = True
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.failure = exc
                    if not self.started.is_set():
                        raise  # start() raises it to its caller
                    if loop.time() - began >= self.restart_reset_s:
                        delay = self.restart_delay_s
                    self.restarts += 1
                    log.exception(
                        "%s failed; restarting in %.1f s (restart %d)",
                        self.name,
                        delay,
                        self.restarts,
                    )
                self._restarting = True
                try:
                    await asyncio.sleep(delay * (0.5 + random.random()))
                finally:
                    self._restarting = False
                delay = min(delay * 2, self.restart_delay_max_s)
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                self.failure = exc
            raise
        finally:
            self.stopped.set()

    async def stop(self) -> None:
        """Cancel the task and wait for it to end."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done() and not self._restarting

    @property
    def state(self) -> ServiceState:
        task = self._task
        if task is None:
            return "failed" if self.failure is not None and not self.started.is_set() else "stopped"
        if task.done():
            if self._ended:
                return "ended"
            return "failed"
        if self._restarting:
            return "restarting"
        return "running" if self.started.is_set() else "starting"


async def stop_together(services: Iterable[Service]) -> None:
    """Stop ``services`` side by side: each stop may wait a while (a periodic pass in
    progress is let finish), and those waits overlap instead of adding up."""
    await asyncio.gather(*(service.stop() for service in services))
