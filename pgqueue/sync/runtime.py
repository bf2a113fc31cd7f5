"""The event loop behind the sync facade: one daemon thread per process.

Sync objects are built on this loop and every call runs there (see
:mod:`pgqueue.client.blocking`).  At interpreter exit the objects still open
are closed (a worker finishes its running jobs and acks them), then the loop
stops.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import weakref
from typing import Any

__all__ = ["SyncRuntime", "runtime"]

log = logging.getLogger("pgqueue.sync")

EXIT_CLOSE_TIMEOUT = 30.0


class SyncRuntime:
    """A running event loop in a daemon thread, and the objects built on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.objects: weakref.WeakSet[Any] = weakref.WeakSet()
        ready = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(ready,), name="pgqueue-sync", daemon=True
        )
        self.thread.start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def track(self, target: Any) -> None:
        self.objects.add(target)

    async def _close_all(self) -> None:
        open_objects = [o for o in list(self.objects) if not getattr(o, "closed", True)]
        if open_objects:
            results = await asyncio.gather(
                *(o.close() for o in open_objects), return_exceptions=True
            )
            for result in results:
                if isinstance(result, BaseException):
                    log.warning("closing at exit failed: %s", result)

    def shutdown(self) -> None:
        """Close what is still open, then stop the loop (at interpreter exit)."""
        if not self.loop.is_running():
            return
        future = asyncio.run_coroutine_threadsafe(self._close_all(), self.loop)
        with contextlib.suppress(Exception):
            future.result(EXIT_CLOSE_TIMEOUT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


_lock = threading.Lock()
_runtime: SyncRuntime | None = None


def runtime() -> SyncRuntime:
    """The process's sync runtime (started on first use)."""
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = SyncRuntime()
            atexit.register(_runtime.shutdown)
        return _runtime
