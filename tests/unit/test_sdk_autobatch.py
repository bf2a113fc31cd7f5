"""Auto-batching of single pushes, against a recording ``send`` (no broker needed).

The acceptance tests (tests/acceptance/test_sdk_tcp_batching.py) run the same
behaviour against real brokers; these pin the coalescing rules.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pgqueue.client.autobatch import AutoBatcher
from pgqueue.errors import DependencyNotFound, IndeterminateCommit, ValidationError
from pgqueue.testing import eventually


class Recorder:
    """A ``send`` that answers ids ``<queue>:<data>`` and records every batch."""

    def __init__(self) -> None:
        self.batches: list[list[Any]] = []
        self.gate: asyncio.Event | None = None
        self.refuse: dict[Any, Exception] = {}
        self.fail_all: Exception | None = None

    async def __call__(self, queue: str, entries: list[dict[str, Any]]) -> list[str]:
        self.batches.append([e["data"] for e in entries])
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_all is not None:
            raise self.fail_all
        for i, entry in enumerate(entries):
            if entry["data"] in self.refuse:
                raise type(self.refuse[entry["data"]])(f"jobs[{i}]: {self.refuse[entry['data']]}")
        return [f"{queue}:{e['data']}" for e in entries]


def entry(data: Any, **extra: Any) -> dict[str, Any]:
    return {"name": "n", "data": data, **extra}


async def test_concurrent_pushes_travel_in_batches_of_at_most_max_jobs() -> None:
    send = Recorder()
    batcher = AutoBatcher(send, max_jobs=50)
    ids = await asyncio.gather(*(batcher.submit("q", entry(i)) for i in range(120)))
    assert ids == [f"q:{i}" for i in range(120)]
    assert [len(b) for b in send.batches] == [50, 50, 20]
    assert (batcher.batches, batcher.jobs) == (3, 120)


async def test_a_lone_push_leaves_at_once_without_waiting_for_the_timer() -> None:
    send = Recorder()
    batcher = AutoBatcher(send, max_delay=3600)
    assert await asyncio.wait_for(batcher.submit("q", entry(1)), 5) == "q:1"


async def test_queues_are_batched_apart() -> None:
    send = Recorder()
    batcher = AutoBatcher(send)
    ids = await asyncio.gather(batcher.submit("a", entry(1)), batcher.submit("b", entry(2)))
    assert ids == ["a:1", "b:2"]
    assert sorted(send.batches) == [[1], [2]]


async def test_pushes_wait_while_every_batch_slot_is_busy_then_go_together() -> None:
    send = Recorder()
    send.gate = asyncio.Event()
    batcher = AutoBatcher(send, max_inflight=1, max_delay=3600)
    first = asyncio.ensure_future(batcher.submit("q", entry(0)))
    await settle()
    later = [asyncio.ensure_future(batcher.submit("q", entry(i))) for i in (1, 2, 3)]
    await settle()
    assert send.batches == [[0]]
    send.gate.set()
    assert await asyncio.gather(first, *later) == ["q:0", "q:1", "q:2", "q:3"]
    assert send.batches == [[0], [1, 2, 3]]


async def test_a_waiting_batch_leaves_after_max_delay_even_when_slots_are_busy() -> None:
    send = Recorder()
    send.gate = asyncio.Event()
    batcher = AutoBatcher(send, max_inflight=1, max_delay=0.005)
    first = asyncio.ensure_future(batcher.submit("q", entry(0)))
    await settle()
    second = asyncio.ensure_future(batcher.submit("q", entry(1)))
    await eventually(lambda: len(send.batches) == 2)
    send.gate.set()
    assert await asyncio.gather(first, second) == ["q:0", "q:1"]


async def test_the_same_custom_id_or_unique_key_never_shares_a_batch() -> None:
    send = Recorder()
    batcher = AutoBatcher(send)
    await asyncio.gather(
        batcher.submit("q", entry(1, customId="x")),
        batcher.submit("q", entry(2, customId="x")),
        batcher.submit("q", entry(3, uniqueKey="k")),
        batcher.submit("q", entry(4, uniqueKey="k")),
        batcher.submit("q", entry(5, customId="y")),
    )
    assert send.batches == [[1], [2, 3], [4, 5]]


async def test_a_job_the_broker_refuses_fails_alone_and_the_others_are_sent_again() -> None:
    send = Recorder()
    send.refuse = {2: DependencyNotFound("Dependency job not found: d")}
    batcher = AutoBatcher(send)
    results = await asyncio.gather(
        *(batcher.submit("q", entry(i)) for i in range(4)), return_exceptions=True
    )
    assert results[0] == "q:0" and results[1] == "q:1" and results[3] == "q:3"
    error = results[2]
    assert isinstance(error, DependencyNotFound)
    assert error.message == "Dependency job not found: d"
    assert send.batches == [[0, 1, 2, 3], [0, 1, 3]]


async def test_an_error_of_the_whole_batch_reaches_every_caller() -> None:
    send = Recorder()
    send.fail_all = IndeterminateCommit("the connection broke after PUSHB was sent")
    batcher = AutoBatcher(send)
    results = await asyncio.gather(
        *(batcher.submit("q", entry(i)) for i in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, IndeterminateCommit) for r in results)
    assert send.batches == [[0, 1, 2]]


async def test_a_refused_job_alone_in_its_batch_gets_the_error_without_the_prefix() -> None:
    send = Recorder()
    send.refuse = {7: ValidationError("delay must be at least 0")}
    batcher = AutoBatcher(send)
    with pytest.raises(ValidationError) as info:
        await batcher.submit("q", entry(7))
    assert info.value.message == "delay must be at least 0"


async def test_close_sends_what_waits_and_waits_for_the_batches_on_the_way() -> None:
    send = Recorder()
    batcher = AutoBatcher(send, max_inflight=0, max_delay=3600)
    pending = asyncio.ensure_future(batcher.submit("q", entry(1)))
    await settle()
    assert send.batches == []
    await batcher.close()
    assert await pending == "q:1"


async def settle() -> None:
    """Let every ready callback and task run (the batcher schedules nothing further
    without its timer, which these tests set far away)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_refusal_naming_no_job_sends_each_job_again_on_its_own() -> None:
    send = Recorder()
    batcher = AutoBatcher(send)
    original = send.__call__

    async def refuse_together(queue: str, entries: list[dict[str, Any]]) -> list[str]:
        if len(entries) > 1:
            send.batches.append([e["data"] for e in entries])
            raise DependencyNotFound("Dependency cycle through job x")
        if entries[0]["data"] == 1:
            send.batches.append([1])
            raise DependencyNotFound("Dependency cycle through job x")
        return await original(queue, entries)

    batcher = AutoBatcher(refuse_together)
    results = await asyncio.gather(
        *(batcher.submit("q", entry(i)) for i in range(3)), return_exceptions=True
    )
    assert results[0] == "q:0" and results[2] == "q:2"
    assert isinstance(results[1], DependencyNotFound)
    assert send.batches[0] == [0, 1, 2]
    assert sorted(send.batches[1:]) == [[0], [1], [2]]


async def test_jobs_with_dependencies_a_parent_or_dedup_travel_alone() -> None:
    send = Recorder()
    batcher = AutoBatcher(send)
    await asyncio.gather(
        batcher.submit("q", entry(1)),
        batcher.submit("q", entry(2, dependsOn=["x"])),
        batcher.submit("q", entry(3, parentId="p")),
        batcher.submit("q", entry(4, uniqueKey="k", dedup={"replace": True})),
        batcher.submit("q", entry(5)),
    )
    assert sorted(send.batches) == [[1, 5], [2], [3], [4]]


async def test_direct_when_idle_sends_a_lone_push_now_and_batches_those_meanwhile() -> None:
    send = Recorder()
    send.gate = asyncio.Event()
    batcher = AutoBatcher(send, max_delay=3600, max_inflight=2, direct_when_idle=True)
    first = asyncio.ensure_future(batcher.submit("q", entry(1)))
    await eventually(lambda: send.batches == [[1]])
    rest = asyncio.gather(*(batcher.submit("q", entry(i)) for i in (2, 3, 4)))
    await eventually(lambda: len(send.batches) == 2)
    send.gate.set()
    assert await first == "q:1"
    assert await rest == ["q:2", "q:3", "q:4"]
    assert send.batches == [[1], [2, 3, 4]]


async def test_by_default_the_pushes_made_while_one_is_on_its_way_leave_together_after_it() -> None:
    """One batch in flight (the default): the batch grows while it is away."""
    send = Recorder()
    send.gate = asyncio.Event()
    batcher = AutoBatcher(send, max_delay=3600, direct_when_idle=True)
    first = asyncio.ensure_future(batcher.submit("q", entry(1)))
    await eventually(lambda: send.batches == [[1]])
    rest = asyncio.gather(*(batcher.submit("q", entry(i)) for i in (2, 3, 4)))
    await settle()
    assert send.batches == [[1]]  # they wait for the one on its way
    send.gate.set()
    assert await first == "q:1"
    assert await rest == ["q:2", "q:3", "q:4"]
    assert send.batches == [[1], [2, 3, 4]]


async def test_direct_when_idle_counts_a_push_on_its_way_against_max_inflight() -> None:
    send = Recorder()
    send.gate = asyncio.Event()
    batcher = AutoBatcher(send, max_delay=3600, max_inflight=1, direct_when_idle=True)
    first = asyncio.ensure_future(batcher.submit("q", entry(1)))
    await eventually(lambda: send.batches == [[1]])
    second = asyncio.ensure_future(batcher.submit("q", entry(2)))
    await settle()
    assert send.batches == [[1]]  # the one slot is taken: entry 2 waits in its batch
    send.gate.set()
    assert (await first, await second) == ("q:1", "q:2")
    assert send.batches == [[1], [2]]


async def test_entries_of_another_kind_batch_by_the_keys_and_solo_they_are_given() -> None:
    batches: list[list[tuple[str, int]]] = []

    async def send(queue: str, entries: list[tuple[str, int]]) -> list[str]:
        batches.append(entries)
        return [f"{key}:{n}" for key, n in entries]

    batcher: AutoBatcher[tuple[str, int]] = AutoBatcher(
        send, keys=lambda e: {("id", e[0])}, solo=lambda e: e[1] < 0
    )
    ids = await asyncio.gather(
        batcher.submit("q", ("a", 1)),
        batcher.submit("q", ("a", 2)),
        batcher.submit("q", ("b", -3)),
        batcher.submit("q", ("c", 4)),
    )
    assert ids == ["a:1", "a:2", "b:-3", "c:4"]
    assert sorted(batches) == [[("a", 1)], [("a", 2), ("c", 4)], [("b", -3)]]
