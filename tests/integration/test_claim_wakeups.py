"""Which hints wake a waiting claim: every wake-up a claim needs, and no more.

An ack's completions wake a long poll only where they can free work (a concurrency
limit's or a group's slot; dependents they release); a pushed job wakes one idle
long poll per process, not all.  Every manager here polls every 60 s: a needed
wake-up that were dropped would leave the claim waiting past the test's bound.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from pgqueue.db.errormap import NotifyQueueFull
from pgqueue.db.executor import Row
from pgqueue.db.queries import Q, Query
from pgqueue.manager import notifier as notifier_module
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager

POLL_MS = 60_000
BOUND_S = 20  # generous: the poll interval (60 s) is what a lost wake-up costs


def _presence_note(params: dict[str, Any]) -> bool:
    """Whether a statement's parameters are those of a notifier's presence note."""
    payload = params.get("payload")
    return isinstance(payload, str) and any(
        word in json.loads(payload) for word in notifier_module.PRESENCE_WORDS
    )


def _idle_claims(manager: PostgresQueueManager, queue: str) -> int:
    """Long polls of ``queue`` whose claim is over and that wait for a hint."""
    return sum(w.idle for w in manager.ctx.notifier._waiters.get(queue, ()))


@pytest.fixture
async def pair(db_dsn: str, namespace: str) -> AsyncIterator[list[PostgresQueueManager]]:
    """Two managers (two brokers, two processes' worth): each hears the other's NOTIFY."""
    async with (
        start_manager(db_dsn, namespace, broker_id="a", poll_interval_ms=POLL_MS) as a,
        start_manager(db_dsn, namespace, broker_id="b", poll_interval_ms=POLL_MS) as b,
    ):
        await a.ctx.notifier.connected.wait()
        await b.ctx.notifier.connected.wait()
        mine, theirs = a.ctx.notifier, b.ctx.notifier
        for notifier in (mine, theirs):  # both hear throughout: no presence note mid-test
            notifier.want("test", True)
        await eventually(
            lambda: (
                theirs.instance in mine.hearing_peers
                and mine.instance in theirs.hearing_peers
                and mine.answers > 0
                and theirs.answers > 0
            ),
            message="the managers hear each other",
        )
        yield [a, b]


async def _held_back_poll_woken_by_ack(
    waiting_on: PostgresQueueManager,
    acker: PostgresQueueManager,
    queue: str,
    setup: Callable[[PostgresQueueManager], Awaitable[None]],
) -> None:
    await setup(acker)
    [first] = await acker.pull_batch(queue, 10)
    waiting = asyncio.create_task(waiting_on.pull_batch(queue, 10, timeout_ms=POLL_MS - 1))
    await eventually(lambda: _idle_claims(waiting_on, queue) == 1, message="the claim waits")
    await acker.ack_batch([(first.id, first.token, None)])
    claims = await asyncio.wait_for(waiting, BOUND_S)
    assert len(claims) == 1 and claims[0].id != first.id


@pytest.mark.parametrize("acked_by", ["same manager", "other manager"])
async def test_an_ack_freeing_a_concurrency_slot_wakes_the_held_back_long_poll(
    pair: list[PostgresQueueManager], acked_by: str
) -> None:
    a, b = pair

    async def setup(m: PostgresQueueManager) -> None:
        await m.set_concurrency("lim", 1)
        await m.push_bulk("lim", [{"name": "n", "data": i} for i in range(2)])

    await _held_back_poll_woken_by_ack(a, a if acked_by == "same manager" else b, "lim", setup)


@pytest.mark.parametrize("acked_by", ["same manager", "other manager"])
async def test_an_ack_freeing_a_group_slot_wakes_the_held_back_long_poll(
    pair: list[PostgresQueueManager], acked_by: str
) -> None:
    a, b = pair

    async def setup(m: PostgresQueueManager) -> None:
        await m.set_group_concurrency("grp", "g", 1)
        await m.push_bulk("grp", [{"name": "n", "data": i, "group_id": "g"} for i in range(2)])

    # The claim waits idle for an event (it no longer re-polls every millisecond,
    # migration 0025): only the ack's hint can wake it within the bound.
    await _held_back_poll_woken_by_ack(a, a if acked_by == "same manager" else b, "grp", setup)


async def test_a_long_poll_held_back_by_a_group_limit_claims_only_when_woken(
    pair: list[PostgresQueueManager], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group held at its concurrency limit reopens at no known time: the long poll
    claims (taking the queue row lock) once, waits for an event, and claims once more
    at its timeout; it re-claimed every millisecond while the claim said retry 1 ms."""
    a, _ = pair
    await a.set_group_concurrency("grp", "g", 1)
    await a.push_bulk("grp", [{"name": "n", "data": i, "group_id": "g"} for i in range(3)])
    assert len(await a.pull_batch("grp", 10)) == 1
    claims = 0
    fetch = a.ctx.db.fetch

    async def counting(query: Query, /, *args: Any, **params: Any) -> list[Row]:
        nonlocal claims
        claims += query is Q.job_claim_planned
        return await fetch(query, *args, **params)

    monkeypatch.setattr(a.ctx.db, "fetch", counting)
    held = await a.pull_batch("grp", 10, timeout_ms=2_000)
    assert claims <= 3, f"{claims} claims in one long poll"
    assert held == [] and held.retry_after_ms is None


@pytest.mark.parametrize("acked_by", ["same manager", "other manager"])
async def test_an_ack_releasing_a_dependent_wakes_the_long_poll_of_its_queue(
    pair: list[PostgresQueueManager], acked_by: str
) -> None:
    a, b = pair
    acker = a if acked_by == "same manager" else b
    first = await acker.push("up", "n", None)
    dependent = await acker.push("down", "n", None, depends_on=[first])
    [claim] = await acker.pull_batch("up", 1)
    waiting = asyncio.create_task(a.pull_batch("down", 1, timeout_ms=POLL_MS - 1))
    await eventually(lambda: _idle_claims(a, "down") == 1, message="the claim waits")
    await acker.ack_batch([(claim.id, claim.token, None)])
    assert [c.id for c in await asyncio.wait_for(waiting, BOUND_S)] == [dependent]


async def test_an_ack_on_a_plain_queue_leaves_its_idle_long_polls_asleep(
    pair: list[PostgresQueueManager],
) -> None:
    """The spurious claim: a completion makes nothing claimable on a queue without
    limits or groups, so neither this manager's nor the other's waiting claims wake."""
    a, b = pair
    await a.push("q", "n", None)
    [claim] = await a.pull_batch("q", 1)
    here = asyncio.create_task(a.pull_batch("q", 1, timeout_ms=POLL_MS - 1))
    there = asyncio.create_task(b.pull_batch("q", 1, timeout_ms=POLL_MS - 1))
    await eventually(lambda: _idle_claims(a, "q") == 1 and _idle_claims(b, "q") == 1)
    notified = b.ctx.notifier.notifications
    await a.ack_batch([(claim.id, claim.token, None)])
    await eventually(lambda: b.ctx.notifier.notifications > notified, message="the NOTIFY")
    for m in (a, b):
        [waiter] = m.ctx.notifier._waiters["q"]
        assert waiter.event.done() and not waiter.work.done()
    job = await a.push("q", "n", None)  # a push still wakes them
    done, _ = await asyncio.wait({here, there}, timeout=BOUND_S, return_when="FIRST_COMPLETED")
    assert [c.id for c in done.pop().result()] == [job]
    for task in (here, there):
        task.cancel()


async def test_ten_long_polls_in_each_of_two_managers_take_every_job_pushed_one_by_one(
    pair: list[PostgresQueueManager], db_dsn: str, namespace: str
) -> None:
    """The 2x10 setup: a pushed job wakes one idle claim per manager, and every job
    is claimed (none waits for the poll interval), pushed one at a time or in bulk."""
    async with start_manager(db_dsn, namespace, broker_id="p") as producer:
        await producer.ctx.notifier.connected.wait()
        got: list[str] = []

        async def poll(m: PostgresQueueManager) -> None:
            while True:
                got.extend(c.id for c in await m.pull_batch("w", 1, timeout_ms=POLL_MS - 1))

        tasks = [asyncio.create_task(poll(m)) for m in pair for _ in range(10)]
        try:
            await eventually(lambda: all(_idle_claims(m, "w") == 10 for m in pair))
            pushed = [await producer.push("w", "n", i) for i in range(15)]
            await asyncio.wait_for(eventually(lambda: len(got) == 15), BOUND_S)
            pushed += await producer.push_bulk("w", [{"name": "n", "data": i} for i in range(25)])
            await asyncio.wait_for(eventually(lambda: len(got) == 40), BOUND_S)
            assert sorted(got) == sorted(pushed)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_lone_push_carries_its_hint_in_its_transaction_and_others_after_their_commits(
    pair: list[PostgresQueueManager], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push with no other write of its process in flight or just before sends its
    NOTIFY in its own statement (no hint statement after the commit) and still wakes
    the claims of both processes; pushes that overlap or follow each other closely
    keep the NOTIFY out of their transactions (it would serialise their commits, and
    other processes', on the cluster-wide notification lock)."""
    a, b = pair
    sent: list[Query] = []
    for method in ("fetch", "fetchval"):
        original = getattr(a.ctx.db, method)

        async def counting(query: Query, /, *args: Any, _o: Any = original, **kw: Any) -> Any:
            if not _presence_note(kw):  # (the managers saying they hear and answering)
                sent.append(query)
            return await _o(query, *args, **kw)

        monkeypatch.setattr(a.ctx.db, method, counting)
    inline = {Q.job_insert_one_notify, Q.job_insert_one_known_notify}
    monkeypatch.setattr(notifier_module, "INLINE_AFTER_S", 0.0)  # every push after a pause
    there = asyncio.create_task(b.pull_batch("lone", 1, timeout_ms=POLL_MS - 1))
    here = asyncio.create_task(a.pull_batch("lone", 1, timeout_ms=POLL_MS - 1))
    await eventually(lambda: _idle_claims(a, "lone") == 1 and _idle_claims(b, "lone") == 1)
    sent.clear()
    first = await a.push("lone", "n", 1)
    second = await a.push("lone", "n", 2)
    claimed = await asyncio.wait_for(asyncio.gather(here, there), BOUND_S)
    assert sorted(c.id for got in claimed for c in got) == sorted([first, second])
    pushes = [q for q in sent if q.name.startswith("job_insert")]
    assert len(pushes) == 2 and set(pushes) <= inline, [q.name for q in sent]
    assert Q.event_hint not in sent

    sent.clear()
    ids = await asyncio.gather(*(a.push("overlap", "n", i) for i in range(8)))
    await a.ctx.notifier.flush_hints()
    assert sum(q in inline for q in sent) <= 1, [q.name for q in sent]
    assert Q.event_hint in sent
    assert len(await b.pull_batch("overlap", 10)) == len(set(ids)) == 8

    monkeypatch.setattr(notifier_module, "INLINE_AFTER_S", 3600.0)  # all close together
    sent.clear()
    waiting = asyncio.create_task(b.pull_batch("close", 1, timeout_ms=POLL_MS - 1))
    await eventually(lambda: _idle_claims(b, "close") == 1, message="the claim waits")
    job_id = await a.push("close", "n", 1)
    [claimed_close] = await asyncio.wait_for(waiting, BOUND_S)
    await a.ctx.notifier.flush_hints()
    assert claimed_close.id == job_id
    assert not inline.intersection(sent) and Q.event_hint in sent, [q.name for q in sent]


async def test_a_lone_push_refused_for_a_full_notification_queue_is_pushed_without_its_hint(
    pair: list[PostgresQueueManager], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The NOTIFY in the push's transaction must not fail a push that the hint after
    the commit would not have failed: the queue full (a listener far behind), the
    push goes again without it (nothing was written) and is hinted after its commit."""
    a, b = pair
    fetch = a.ctx.db.fetch
    refused: list[str] = []

    async def refusing(query: Query, /, *args: Any, **params: Any) -> list[Row]:
        if query in (Q.job_insert_one_notify, Q.job_insert_one_known_notify):
            refused.append(query.name)
            raise NotifyQueueFull("too many notifications in the NOTIFY queue")
        return await fetch(query, *args, **params)

    monkeypatch.setattr(a.ctx.db, "fetch", refusing)
    monkeypatch.setattr(notifier_module, "INLINE_AFTER_S", 0.0)
    waiting = asyncio.create_task(b.pull_batch("full", 1, timeout_ms=POLL_MS - 1))
    await eventually(lambda: _idle_claims(b, "full") == 1, message="the claim waits")
    job_id = await a.push("full", "n", 1)
    [claimed] = await asyncio.wait_for(waiting, BOUND_S)
    assert claimed.id == job_id and len(refused) == 1


async def test_a_push_made_before_its_peer_knew_a_claim_waits_still_wakes_that_claim(
    pair: list[PostgresQueueManager], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing waits anywhere: a push sends no hint at all.  A claim that starts
    waiting on b makes b say it hears; a push that a makes before it has read that
    goes without a hint, and the claim still takes the job at once: a's answer,
    sent after it noted b, wakes it (not the 60 s poll).  Then a hints again."""
    a, b = pair
    mine, theirs = a.ctx.notifier, b.ctx.notifier
    for notifier in (mine, theirs):
        notifier.want("test", False)
    await eventually(lambda: mine.unheard() and theirs.unheard(), message="both deaf")
    sent = mine.hints_sent
    await a.push("unheard", "n", 0)
    assert mine.hints_sent == sent
    held: list[dict[str, Any]] = []
    presence = mine._presence
    monkeypatch.setattr(
        mine, "_presence", lambda note: held.append(note) if "hear" in note else presence(note)
    )
    waiting = asyncio.create_task(b.pull_batch("late", 1, timeout_ms=POLL_MS - 1))
    await eventually(lambda: _idle_claims(b, "late") == 1 and bool(held), message="b hears")
    job_id = await a.push("late", "n", 1)
    assert mine.hints_sent == sent, "a did not know yet"
    for note in held:
        presence(note)
    [claimed] = await asyncio.wait_for(waiting, BOUND_S)
    assert claimed.id == job_id
    assert theirs.instance in mine.hearing_peers
    await a.push("late", "n", 2)
    await mine.flush_hints()
    assert mine.hints_sent == sent + 1
