"""A subscription's event queue: order, bound, runs in and out, a waiting get."""

from __future__ import annotations

import asyncio

import pytest

from pgqueue.manager.outbox import Event, _Fifo


def _event(n: int) -> Event:
    return Event(n, n, "q", f"j{n}", "pushed", {}, 0.0)


def test_events_come_out_in_the_order_they_went_in() -> None:
    fifo = _Fifo(3)
    assert fifo.empty() and not fifo.full() and fifo.get_nowait() is None
    fifo.put_nowait(_event(1))
    fifo.put_all([_event(2), _event(3)])
    assert fifo.full() and fifo.qsize() == 3
    assert fifo.take(2) == [_event(1), _event(2)]
    assert fifo.take(5) == [_event(3)] and fifo.take(5) == []
    assert not _Fifo(0).full()  # 0: unbounded


async def test_a_waiting_get_takes_what_is_put_and_a_cancelled_one_takes_nothing() -> None:
    fifo = _Fifo(10)
    cancelled = asyncio.create_task(fifo.get())
    waiting = asyncio.create_task(fifo.get())
    await asyncio.wait([cancelled, waiting], timeout=0)  # both wait now
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    fifo.put_all([_event(1), _event(2)])
    assert await waiting == _event(1)
    assert fifo.get_nowait() == _event(2)
