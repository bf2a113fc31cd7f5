"""What a driver's LISTEN connection has delivered, until the connection breaks."""

from __future__ import annotations

import asyncio

from pgqueue.db.executor import Notification
from pgqueue.errors import DatabaseUnavailable

__all__ = ["NotificationInbox"]


class NotificationInbox:
    """Notifications in arrival order; once :meth:`close` is called (the
    connection broke), every :meth:`get` past the last one raises
    :class:`~pgqueue.errors.DatabaseUnavailable`."""

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Notification | None] = asyncio.Queue()

    def put(self, channel: str, payload: str) -> None:
        self._queue.put_nowait(Notification(channel, payload))

    def close(self) -> None:
        self._queue.put_nowait(None)

    async def get(self) -> Notification:
        """The next notification (cancel-safe)."""
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)
            raise DatabaseUnavailable("the LISTEN connection closed")
        return item
