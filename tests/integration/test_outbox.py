"""The outbox reader: every event once, in commit-safe order, resumable without gaps."""

from __future__ import annotations

import asyncio
import contextlib
import json

import asyncpg
import pytest

from pgqueue.manager import notifier as notifier_module
from pgqueue.manager.outbox import Event, Subscription
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.helpers import trim_until


async def take(sub: Subscription, count: int, timeout: float = 10.0) -> list[Event]:
    async def collect() -> list[Event]:
        return [await sub.get() for _ in range(count)]

    return await asyncio.wait_for(collect(), timeout)


async def test_a_jobs_life_arrives_as_events_in_order(manager: PostgresQueueManager) -> None:
    sub = await manager.subscribe_events("q")
    job_id = await manager.push("q", "n", {"a": 1})
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(claim.id, claim.token, {"r": 2})
    events = await take(sub, 3)
    assert [(e.type, e.job_id) for e in events] == [
        ("pushed", job_id),
        ("active", job_id),
        ("completed", job_id),
    ]
    assert events[2].payload["returnvalue"] == {"r": 2}
    assert events[2].payload["duration"] >= 0
    sub.close()


async def test_a_subscription_sees_only_its_queue(manager: PostgresQueueManager) -> None:
    sub = await manager.subscribe_events("mine")
    await manager.push("other", "n", 1)
    mine = await manager.push("mine", "n", 2)
    [event] = await take(sub, 1)
    assert event.job_id == mine
    sub.close()


async def test_events_from_another_broker_arrive(db_dsn: str, namespace: str) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        sub = await a.subscribe_events("q")
        job_id = await b.push("q", "n", 1)
        [event] = await take(sub, 1)
        assert (event.type, event.job_id) == ("pushed", job_id)
        sub.close()


async def test_resume_token_continues_without_gaps_or_duplicates(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(db_dsn, namespace, broker_id="producer") as producer:
        async with start_manager(db_dsn, namespace, broker_id="first") as first:
            sub = await first.subscribe_events("q")
            ids = [await producer.push("q", "n", i) for i in range(5)]
            seen = await take(sub, 3)
            token = seen[-1].resume
            sub.close()
        ids += [await producer.push("q", "n", i) for i in range(5, 8)]
        # A different broker (think: after a restart) resumes from the token.
        async with start_manager(db_dsn, namespace, broker_id="second") as second:
            resumed = await second.subscribe_events("q", after=token)
            rest = await take(resumed, 5)
            assert [e.job_id for e in seen + rest] == ids
            assert resumed.get_nowait() is None
            resumed.close()


async def test_a_long_transaction_does_not_hide_later_commits_nor_lose_its_own(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    """The fast path delivers commits at once even while an older transaction holds
    the xmin horizon back; the older transaction's event still arrives when it
    commits, and resuming from a token taken in between neither loses nor repeats."""
    sub = await manager.subscribe_events("q")
    long_tx = await asyncpg.connect(db_dsn)
    try:
        await long_tx.execute("BEGIN")
        await long_tx.execute(
            "INSERT INTO pgqueue_events (namespace, queue, job_id, type) "
            "VALUES ($1, 'q', 'slow', 'pushed')",
            namespace,
        )
        fast = await manager.push("q", "n", 1)
        [event] = await take(sub, 1)
        assert event.job_id == fast, "delivered ahead of the held-back cursor"
        token = event.resume
        await long_tx.execute("COMMIT")
        [late] = await take(sub, 1)
        assert late.job_id == "slow"
    finally:
        await long_tx.close()
    resumed = await manager.subscribe_events("q", after=token)
    [again] = await take(resumed, 1)
    assert again.job_id == "slow", "resuming delivers the late commit and not the fast one"
    assert resumed.get_nowait() is None
    sub.close()
    resumed.close()


async def test_a_subscriber_that_falls_behind_catches_up_from_the_database(
    manager: PostgresQueueManager,
) -> None:
    sub = await manager.subscribe_events("q", maxsize=5)
    ids = await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(40)])
    events = await take(sub, 40)
    assert [e.job_id for e in events] == ids
    assert len({e.id for e in events}) == 40
    sub.close()


async def test_events_arrive_by_polling_when_listen_is_off(db_dsn: str, namespace: str) -> None:
    async with start_manager(
        db_dsn, namespace, broker_id="p", poll_only=True, poll_interval_ms=50
    ) as manager:
        sub = await manager.subscribe_events("q")
        job_id = await manager.push("q", "n", 1)
        [event] = await take(sub, 1)
        assert event.job_id == job_id
        sub.close()


async def test_a_held_back_horizon_delays_nothing_and_loses_nothing(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    """With the horizon held back, every later commit is delivered at once, in
    order; the holder's own event follows when it commits: none lost, none twice."""
    sub = await manager.subscribe_events("q")
    holder = await asyncpg.connect(db_dsn)
    try:
        await holder.execute("BEGIN")
        await holder.execute(
            "INSERT INTO pgqueue_events (namespace, queue, job_id, type) "
            "VALUES ($1, 'q', 'hold', 'pushed')",
            namespace,
        )
        ids = [await manager.push("q", "n", i) for i in range(300)]
        early = await take(sub, 300)
        assert [e.job_id for e in early] == ids
        await holder.execute("COMMIT")
    finally:
        await holder.close()
    [late] = await take(sub, 1)
    assert late.job_id == "hold"
    assert sub.get_nowait() is None
    sub.close()


async def test_a_new_subscription_leaves_out_what_committed_before_it(
    db_dsn: str, namespace: str
) -> None:
    """ "From now on" is the database's now, not this broker's: an event another
    broker committed before the subscription is left out even when this broker's
    reader has not read it yet (exact=False keeps it, as the projection wants)."""
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(
            db_dsn, namespace, broker_id="b", poll_only=True, poll_interval_ms=600_000
        ) as b,
    ):
        (await b.subscribe_events("warm-up")).close()  # b's reader starts, then idles
        assert b.outbox is not None
        before = await a.push("q", "n", "before")
        exact = await b.subscribe_events("q")
        overlap = await b.subscribe_events("q", exact=False)
        after = await a.push("q", "n", "after")
        await b.outbox.poll()  # the reader catches up: both events pass it now
        [event] = await take(exact, 1)
        assert event.job_id == after
        assert exact.get_nowait() is None
        assert [e.job_id for e in await take(overlap, 2)] == [before, after]
        exact.close()
        overlap.close()


async def _take_all(sub: Subscription, count: int, timeout: float = 20.0) -> list[Event]:
    """Up to ``count`` events within ``timeout`` (fewer when some never come)."""
    got: list[Event] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while len(got) < count:
                got.append(await sub.get())
    return got


async def test_a_slow_subscriber_on_the_polling_path_misses_no_event(
    db_dsn: str, namespace: str
) -> None:
    """Issue 9 item 2: an event that does not fit the subscriber's queue is not
    passed: the subscriber catches up from the database starting at it."""
    async with start_manager(
        db_dsn, namespace, broker_id="p", poll_only=True, poll_interval_ms=50
    ) as manager:
        sub = await manager.subscribe_events("q", maxsize=5)
        ids = await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(20)])
        got = await _take_all(sub, 20, timeout=10)
        assert [e.job_id for e in got] == ids
        sub.close()


async def test_a_forgotten_prepared_transaction_does_not_stall_live_delivery(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    """Issue 9 item 4: with the xmin horizon held back by a prepared transaction,
    every committed event is still delivered at once, and resume tokens stay
    small whatever the number of events delivered meanwhile."""
    sub = await manager.subscribe_events("q")
    holder = await asyncpg.connect(db_dsn)
    gid = f"pgqueue-test-{namespace}"
    try:
        await holder.execute("BEGIN")
        await holder.execute(
            "INSERT INTO pgqueue_events (namespace, queue, job_id, type) "
            "VALUES ($1, 'other', 'hold', 'pushed')",
            namespace,
        )
        await holder.execute(f"PREPARE TRANSACTION '{gid}'")
        ids: list[str] = []
        for start in range(0, 1_000, 100):
            ids += await manager.push_bulk(
                "q", [{"name": "n", "data": i} for i in range(start, start + 100)]
            )
        got = await _take_all(sub, 1_000)
        assert [e.job_id for e in got] == ids
        assert len(got[-1].resume) < 200, "the token does not name every event delivered"
        resumed = await manager.subscribe_events("q", after=got[499].resume)
        again = await _take_all(resumed, 500)
        assert [e.job_id for e in again] == ids[500:]
        assert resumed.get_nowait() is None
        resumed.close()
    finally:
        await holder.execute(f"ROLLBACK PREPARED '{gid}'")
        await holder.close()
    sub.close()


async def test_retention_never_deletes_events_beyond_the_commit_safe_horizon(
    db_dsn: str, namespace: str
) -> None:
    """Issue 9 item 3: with the horizon held back and more events than the
    per-queue limit, retention leaves every event a reader has not passed."""
    async with start_manager(
        db_dsn, namespace, broker_id="r", retention_events_per_queue=100
    ) as manager:
        sub = await manager.subscribe_events("q")
        holder = await asyncpg.connect(db_dsn)
        try:
            await holder.execute("BEGIN")
            await holder.execute("SELECT pg_current_xact_id()")
            ids: list[str] = []
            for start in range(0, 1_000, 100):
                ids += await manager.push_bulk(
                    "q", [{"name": "n", "data": i} for i in range(start, start + 100)]
                )
            report = await manager.retention_pass()
            assert report.events == 0, "nothing past the commit-safe horizon is pruned"
            await holder.execute("COMMIT")
        finally:
            await holder.close()
        got = await _take_all(sub, 1_000)
        assert [e.job_id for e in got] == ids
        sub.close()


async def test_resuming_from_a_pruned_position_reports_the_lost_range(
    manager: PostgresQueueManager,
) -> None:
    """Issue 9 item 3: a subscriber resuming from a position whose events were
    pruned gets an explicit ``gap`` event (lost from X to Y), then what remains."""
    sub = await manager.subscribe_events("q")
    await manager.push("q", "n", "seen")
    [seen] = await take(sub, 1)
    sub.close()
    lost = [await manager.push("q", "n", i) for i in range(10)]
    kept = [await manager.push("q", "n", i) for i in range(3)]
    assert await trim_until(manager, "q", 3, at_least=11) == 11  # the seen one too
    resumed = await manager.subscribe_events("q", after=seen.resume)
    gap, *rest = await take(resumed, 4)
    assert gap.type == "gap" and gap.job_id is None
    assert gap.payload["from"] == seen.resume and gap.payload["to"]
    assert [e.job_id for e in rest] == kept
    assert not set(lost) & {e.job_id for e in rest}
    # Resuming after the gap event neither repeats it nor loses what follows.
    again = await manager.subscribe_events("q", after=gap.resume)
    assert [e.job_id for e in await take(again, 3)] == kept
    assert again.get_nowait() is None
    resumed.close()
    again.close()


async def test_push_and_ack_hint_their_events_after_the_commit(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    """The hot path's NOTIFY (after the commit, or in a lone push's own transaction)
    names the namespace, the queue and the events' id range.  The listener says hello,
    as every notifier does: a manager that heard no other listener keeps its hints
    in-process."""
    hints: asyncio.Queue[dict[str, object]] = asyncio.Queue()

    def on_note(*args: object) -> None:
        note = json.loads(str(args[3]))
        if not any(word in note for word in notifier_module.PRESENCE_WORDS):
            hints.put_nowait(note)

    listener = await asyncpg.connect(db_dsn)
    try:
        await listener.add_listener("pgqueue_events", on_note)
        hello = json.dumps({"ns": namespace, "hello": "test-listener"})
        await listener.execute(f"NOTIFY pgqueue_events, '{hello}'")
        await eventually(lambda: manager.notifier.peers_heard, message="the hello heard")
        job_id = await manager.push("hinted", "n", 1)
        pushed = await asyncio.wait_for(hints.get(), 10)
        [claim] = await manager.pull_batch("hinted", 1)
        await manager.ack(claim.id, claim.token, None)
        acked = await asyncio.wait_for(hints.get(), 10)
        ids = await listener.fetch(
            "SELECT id, type FROM pgqueue_events WHERE namespace = $1 AND job_id = $2 ORDER BY id",
            namespace,
            job_id,
        )
    finally:
        await listener.close()
    by_type = {row["type"]: row["id"] for row in ids}
    assert (pushed["ns"], pushed["q"], pushed["a"], pushed["b"]) == (
        namespace,
        ["hinted"],
        by_type["pushed"],
        by_type["pushed"],
    )
    assert (acked["ns"], acked["q"]) == (namespace, ["hinted"])
    assert acked["a"] <= by_type["completed"] <= acked["b"]  # type: ignore[operator]


async def test_a_lone_manager_keeps_its_hints_in_process_until_another_listener_says_hello(
    db_dsn: str, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody else listens: a push's hint costs no statement, and the manager's own
    long-polling claim still wakes at once.  A second manager's hello (answered with
    here) makes both send their hints again, and each hears the other's."""
    monkeypatch.setattr(notifier_module, "ALONE_AFTER_S", 0.2)
    async with start_manager(db_dsn, namespace, broker_id="lone", poll_interval_ms=10_000) as a:
        notifier = a.notifier
        await eventually(notifier.alone, message="alone")
        sent = notifier.hints_sent
        claim = asyncio.create_task(a.pull_batch("solo", 1, timeout_ms=8_000))
        await eventually(lambda: notifier.waiter_count("solo") == 1, message="the claim waits")
        started = asyncio.get_running_loop().time()
        job_id = await a.push("solo", "n", 1)
        [claimed] = await claim
        assert claimed.id == job_id
        assert asyncio.get_running_loop().time() - started < 5  # woken, not the 10 s poll
        assert notifier.hints_sent == sent and notifier.hints_kept >= 1
        async with start_manager(db_dsn, namespace, broker_id="second") as b:
            await eventually(lambda: notifier.peers_heard, message="a heard b's hello")
            await eventually(lambda: b.notifier.peers_heard, message="b heard a's answer")
            assert not notifier.alone() and not b.notifier.alone()
            waiting = asyncio.create_task(b.pull_batch("duo", 1, timeout_ms=8_000))
            await eventually(lambda: b.notifier.waiter_count("duo") == 1, message="b waits")
            await eventually(
                lambda: b.notifier.instance in notifier.hearing_peers, message="a knows b hears"
            )
            started = asyncio.get_running_loop().time()
            other = await a.push("duo", "n", 2)
            [claimed] = await waiting
            assert claimed.id == other
            assert asyncio.get_running_loop().time() - started < 5
            assert notifier.hints_sent > sent


async def test_a_hint_asks_for_a_read_only_when_a_prompt_subscription_listens(
    db_dsn: str, namespace: str
) -> None:
    """A cache's subscription (``prompt=False``, the projection's) costs no read per
    NOTIFY hint: its events come with the next poll.  A prompt subscription still
    has every hint read at once, and the cache gets those events too."""
    async with (
        start_manager(db_dsn, namespace, broker_id="a", poll_interval_ms=10_000) as a,
        start_manager(db_dsn, namespace, broker_id="b", poll_interval_ms=10_000) as b,
    ):
        a.notifier.want("test", True)  # b hints (nothing of a needs them otherwise)
        await eventually(
            lambda: a.notifier.instance in b.notifier.hearing_peers and a.notifier.answers > 0,
            message="b knows a hears, and a heard b's answer",
        )
        cache = await a.subscribe_events(None, tokens=False, exact=False, prompt=False)
        reader = a.outbox
        assert reader is not None
        await eventually(lambda: not reader.read_due, message="the first read done")
        heard = a.notifier.notifications
        first = await b.push("lazy", "n", 1)
        await eventually(lambda: a.notifier.notifications > heard, message="the hint heard")
        assert not reader.read_due, "no read for a cache's sake"
        assert cache.get_nowait() is None
        prompt = await a.subscribe_events("lazy")
        job_id = await b.push("lazy", "n", 2)
        [event] = await take(prompt, 1, timeout=5)  # the hint's read, not the 10 s poll
        assert event.job_id == job_id
        assert [e.job_id for e in await take(cache, 2)] == [first, job_id]
        prompt.close()
        cache.close()
