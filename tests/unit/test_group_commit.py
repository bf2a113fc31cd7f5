"""The coalescer's rules, without a database: each item decided on its own."""

from __future__ import annotations

import asyncio

import pytest

from pgqueue.errors import DatabaseUnavailable, ValidationError
from pgqueue.server.groupcommit import Coalescer
from pgqueue.testing import eventually


class Engine:
    """A batch function that is held until released; refuses 'bad' items whole."""

    def __init__(self, error: Exception | None = None) -> None:
        self.release = asyncio.Event()
        self.batches: list[list[str]] = []
        self.error = error

    async def run(self, items: list[str]) -> list[str]:
        self.batches.append(list(items))
        await self.release.wait()
        if self.error is not None:
            raise self.error
        if "bad" in items:
            raise ValidationError("bad item", field="result")
        return [f"done:{item}" for item in items]


async def _held(coalescer: Coalescer[str, str], engine: Engine, items: list[str]) -> list[object]:
    blockers = [asyncio.create_task(coalescer.submit(f"blocker{i}")) for i in range(2)]
    await eventually(lambda: len(engine.batches) == 2, message="two batches in flight")
    tasks = [asyncio.create_task(coalescer.submit(item)) for item in items]
    await eventually(lambda: coalescer.waiting == len(items), message="all waiting")
    engine.release.set()
    await asyncio.gather(*blockers)
    return list(await asyncio.gather(*tasks, return_exceptions=True))


async def test_an_invalid_item_gets_its_error_and_every_other_item_its_result() -> None:
    engine = Engine()
    coalescer: Coalescer[str, str] = Coalescer(engine.run)
    items = [f"ok{i}" for i in range(7)]
    items.insert(3, "bad")
    results = await _held(coalescer, engine, items)
    assert isinstance(results[3], ValidationError)
    assert [r for i, r in enumerate(results) if i != 3] == [f"done:ok{i}" for i in range(7)]
    assert engine.batches[2] == items, "they were coalesced first"


async def test_two_items_with_the_same_key_never_share_a_batch() -> None:
    engine = Engine()
    coalescer: Coalescer[str, str] = Coalescer(engine.run, key=lambda item: item[:1])
    results = await _held(coalescer, engine, ["a1", "b1", "a2", "c1"])
    assert results == ["done:a1", "done:b1", "done:a2", "done:c1"]
    assert engine.batches[2:] == [["a1", "b1", "c1"], ["a2"]]


async def test_an_error_of_the_whole_batch_reaches_every_item_without_retries() -> None:
    engine = Engine(DatabaseUnavailable("down"))
    coalescer: Coalescer[str, str] = Coalescer(engine.run)
    blocker = asyncio.create_task(coalescer.submit("x"))
    await eventually(lambda: engine.batches, message="the batch runs")
    engine.release.set()
    with pytest.raises(DatabaseUnavailable):
        await blocker
    assert len(engine.batches) == 1
