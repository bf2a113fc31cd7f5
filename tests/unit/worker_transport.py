"""A transport for SDK worker tests that need no broker: the calls a ``Worker``
makes besides pulling and recording outcomes answer at once and do nothing.
Tests subclass it with the pulls, ACKs and renewals they script."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any


class QuietTransport:
    """Registration, heartbeats, releases and close are no-ops; ``closed`` is set on
    close, so a scripted pull can wait on it."""

    wide_ints = True

    def __init__(self) -> None:
        self.closed = asyncio.Event()

    async def push(self, queue: str, job: Any) -> str:
        raise NotImplementedError

    async def register_worker(self, *args: Any) -> None:
        pass

    async def unregister_worker(self, *args: Any) -> None:
        pass

    async def worker_heartbeat(self, *args: Any) -> None:
        pass

    async def release(self, items: Sequence[tuple[str, str]]) -> None:
        pass

    async def close(self) -> None:
        self.closed.set()
