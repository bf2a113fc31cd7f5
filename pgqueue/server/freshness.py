"""How old a request may be when the broker reads it, and whether its client is gone.

A client that timed out has given up: it may already have re-sent the request to
another broker (a re-push with the same custom id), so running the old copy later can
admit or change something twice.  The broker therefore serves a request only while

- its connection is alive (not closed, no end-of-stream from the peer), and
- it is younger than its deadline: the client's own ``reqTimeout`` (milliseconds,
  sent by pgqueue's SDK with every request) or the broker's ``max_request_age_ms``
  (for clients that send none; the official clients give up after 30 s), the smaller.

Age is measured on the broker's monotonic clock from the earliest moment the request
may have reached the socket.  Bytes read while the event loop runs normally arrived
just now; bytes read right after the loop stood still (the process paused with
SIGSTOP, a frozen VM, a blocked loop) may have waited in the kernel through the
whole gap, so their age counts from its start.  :class:`LoopWatch` sees the gaps.
"""

from __future__ import annotations

import _socket
import asyncio
import contextlib
import math
import socket

__all__ = ["LoopWatch", "peer_closed", "peer_closed_fd", "request_deadline_ms"]

_PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT

TICK_S = 0.05
SLACK_S = 0.05
AFTER_GAP_S = 1.0  # bytes read this soon after a gap may have waited through it


class LoopWatch:
    """Ticks on the event loop and remembers the last gap in its ticks."""

    def __init__(self) -> None:
        self._last_tick = -math.inf
        self._gap_start = -math.inf
        self._gap_end = -math.inf
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._last_tick = asyncio.get_running_loop().time()
        self._task = asyncio.create_task(self._run(), name="pgqueue:loop-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(TICK_S)
            now = loop.time()
            if now - before > TICK_S + SLACK_S:
                self._gap_start, self._gap_end = before, now
            self._last_tick = now

    def earliest_arrival(self, now: float, since: float) -> float:
        """When bytes read at ``now`` may have arrived at the earliest, given that
        their connection last read (or was accepted) at ``since``."""
        if self._task is None:
            return now
        if now - self._last_tick > TICK_S + SLACK_S:  # a gap the ticker has not seen yet
            return max(since, self._last_tick)
        if self._gap_end >= since and now - self._gap_end <= AFTER_GAP_S:
            return max(since, self._gap_start)  # read just after a gap: it may have waited
        return now


def request_deadline_ms(msg: dict[str, object], max_age_ms: int) -> float | None:
    """The age (ms) past which ``msg`` is not served; None: no deadline.

    Raises ValueError naming ``reqTimeout`` when the client sent a bad one.
    """
    sent = msg.get("reqTimeout")
    if sent is None:
        return float(max_age_ms) if max_age_ms > 0 else None
    if isinstance(sent, bool) or not isinstance(sent, int | float) or not sent > 0:
        raise ValueError("reqTimeout must be a positive number of milliseconds")
    return float(sent) if max_age_ms <= 0 else min(float(sent), float(max_age_ms))


def peer_closed(sock: object) -> bool:
    """Whether the peer of ``sock`` (a transport's socket) has closed or reset it.

    Peeks without consuming: end-of-stream with nothing left to read, or an error.
    Bytes still waiting mean the peer was alive when it sent them: not closed yet.
    """
    fileno = getattr(sock, "fileno", None)
    if fileno is None:
        return False
    try:
        fd = fileno()
        family, kind, proto = int(sock.family), int(sock.type), int(sock.proto)  # type: ignore[attr-defined]
    except OSError:
        return True
    return peer_closed_fd(fd, family, kind, proto)


def peer_closed_fd(fd: int, family: int, kind: int, proto: int) -> bool:
    """:func:`peer_closed` of the socket on descriptor ``fd`` (negative: closed) of that
    family, type and protocol (read once per connection: each read of them from a
    transport's socket builds enum members)."""
    if fd < 0:
        return True
    try:
        # Borrow the descriptor (no dup and close, no family probes, the C type without
        # the Python wrapper's __init__); detach() gives it back without closing it.
        peek = _socket.socket(family, kind, proto, fd)
        try:
            return peek.recv(1, _PEEK) == b""
        finally:
            peek.detach()
    except BlockingIOError:
        return False
    except OSError:
        return True
