"""One lifecycle for every long-lived component: ``start()``, ``stop()``, ``started``.

A :class:`Service` runs one background task.  ``stop()`` cancels it and waits
for it; a service that crashed re-raises nothing on stop but records the
error in ``failure`` (health checks read it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

__all__ = ["Service"]

log = logging.getLogger("pgqueue")


class Service:
    """Base class: override :meth:`run`; it should set ``self.started`` when ready."""

    name = "service"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()
        self.failure: BaseException | None = None
        self._task: asyncio.Task[Any] | None = None

    async def run(self) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        """Start the task and wait until it reports ``started`` (or dies trying)."""
        if self._task is not None:
            return
        self.stopped.clear()
        self._task = asyncio.create_task(self._main(), name=f"pgqueue:{self.name}")
        started = asyncio.create_task(self.started.wait())
        try:
            done, _ = await asyncio.wait({started, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            started.cancel()  # no waiter left behind, even when this start is cancelled
        if started not in done:
            self._task.result()

    async def _main(self) -> None:
        try:
            await self.run()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self.failure = exc
            if self.started.is_set():  # before that, start() raises it to its caller
                log.exception("%s stopped with an error", self.name)
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
        return self._task is not None and not self._task.done()
