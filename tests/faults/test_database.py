"""Database faults under load: PostgreSQL restarted, a broker's connection cut,
black-holed or delayed through a TCP proxy (the reply to COMMIT dropped too),
the LISTEN connection killed, the xmin horizon held back by a long and a
prepared transaction, and the connection storm when PostgreSQL comes back.

Admissions of unknown outcome are resolved by custom id (the producer re-sends
the same id); every run ends with the checker's headline and its safety bar.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import asyncpg
import pytest

from pgqueue.embedded import EmbeddedPostgres
from pgqueue.testing import eventually
from tests.fault_proxy import FaultProxy
from tests.faults.harness import FaultRun, assert_safe

pytestmark = pytest.mark.timeout(300)

POISON = {"attempts": 3, "backoff": 100}


def _is_commit(data: bytes) -> bool:
    return b"COMMIT" in data


def load(run: FaultRun, queue: str, *, producer_brokers: tuple[str, ...] = ()) -> None:
    run.start_worker("w1", queue, concurrency=4, lock_ms=2_000, work_ms=30)
    run.start_worker("w2", queue, concurrency=4, lock_ms=2_000, work_ms=30)
    run.start_producer(
        "p1",
        queue,
        brokers=producer_brokers,
        work_ms=30,
        poison_every=25,
        poison_options=POISON,
        pause=0.01,
    )


async def test_postgres_restarted_under_load_keeps_every_admitted_job(
    own_postgres: tuple[EmbeddedPostgres, str], tmp_path: Path
) -> None:
    server, dsn = own_postgres
    run = FaultRun(
        dsn, "pgrestart", tmp_path / "run", label="pg-restart", client_options="timeout=10"
    )
    try:
        queue = "q-pg-restart"
        await run.start_brokers("b1", "b2")
        await run.start_subscriber("s1", queue)
        load(run, queue)
        await run.progress(20)
        for _ in range(2):
            run.nemesis.nemesis("pg-restart", "postgres")
            await asyncio.to_thread(server.restart)  # pg_ctl restart -m fast, under load
            run.nemesis.nemesis("pg-restart", "postgres", "end")
            await run.progress(20, timeout=90)
        report = await run.finish(backoff_ms=POISON["backoff"])
    finally:
        await run.abort()
    assert_safe(report)
    assert report.faults["pg-restart"] == 2


async def test_a_brokers_database_link_cut_black_holed_delayed_and_its_commit_reply_dropped(
    fault_run: Callable[..., FaultRun], proxy: FaultProxy
) -> None:
    run = fault_run(label="db-link faults", client_options="timeout=5")
    queue = "q-db-link"
    await asyncio.gather(
        run.start_broker_async("b1", dsn=proxy.dsn),  # b1 reaches PostgreSQL through the proxy
        run.start_broker_async("b2"),
    )
    await run.start_subscriber("s1", queue, brokers=["b2"])
    load(run, queue, producer_brokers=("b1",))  # every admission goes through b1
    await run.progress(20)
    dropped = 0
    for _ in range(3):  # the reply to COMMIT (or to an autocommit write) dropped
        proxy.arm(_is_commit)
        try:
            await asyncio.wait_for(proxy.cut.wait(), timeout=10)
        except TimeoutError:
            continue
        dropped += 1
        run.nemesis.nemesis("commit-reply-dropped", "b1")
        await run.progress(8)
    for _ in range(2):
        run.nemesis.nemesis("proxy-cut", "b1")
        proxy.cut_all()
        await run.progress(8)
    run.nemesis.nemesis("proxy-blackhole", "b1")
    proxy.blackhole(True)
    await asyncio.sleep(2)  # the fault's duration
    proxy.blackhole(False)
    run.nemesis.nemesis("proxy-blackhole", "b1", "end")
    await run.progress(10, timeout=60)
    run.nemesis.nemesis("proxy-delay", "b1")
    proxy.delay = 0.05
    await run.progress(10, timeout=60)
    proxy.delay = 0.0
    run.nemesis.nemesis("proxy-delay", "b1", "end")
    await run.progress(8)
    report = await run.finish(backoff_ms=POISON["backoff"])
    assert_safe(report)
    assert dropped >= 1, "no COMMIT went through the proxy"


async def test_a_killed_listen_connection_leaves_event_delivery_bounded_by_polling(
    fault_run: Callable[..., FaultRun],
) -> None:
    run = fault_run(label="listen-killed")
    queue = f"q-listen-{uuid.uuid4().hex[:6]}"
    run.start_broker("b1")
    await run.start_subscriber("s1", queue)
    load(run, queue, producer_brokers=("b1",))
    await run.progress(20)
    for _ in range(3):
        await run.kill_listen("b1")
        await run.progress(10)
    report = await run.finish(backoff_ms=POISON["backoff"])
    assert_safe(report)
    assert report.faults["listen-kill"] >= 1
    # poll interval 100 ms: an event is delivered within it (plus load) without NOTIFY
    assert report.max_event_delay_s is not None and report.max_event_delay_s < 3.0, report


async def test_a_long_and_a_prepared_transaction_holding_xmin_back_hold_up_nothing(
    fault_run: Callable[..., FaultRun], db_dsn: str
) -> None:
    # An idle session in a REPEATABLE READ transaction with an xid, and a
    # prepared transaction (two-phase commit, forgotten by its coordinator):
    # both keep the cluster's xmin horizon below every event of the load.  The
    # outbox keeps them in its running list; delivery and the queue go on.
    run = fault_run(label="xmin held")
    queue = f"q-xmin-{uuid.uuid4().hex[:6]}"
    gid = f"pgqueue-faults-{uuid.uuid4().hex}"
    long_tx = await asyncpg.connect(db_dsn)
    checker = await asyncpg.connect(db_dsn)
    prepared = False
    try:
        await long_tx.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        held = int(await long_tx.fetchval("SELECT pg_current_xact_id()::text::bigint"))
        two_phase = await asyncpg.connect(db_dsn)
        try:
            await two_phase.execute("BEGIN")
            await two_phase.fetchval("SELECT pg_current_xact_id()")
            await two_phase.execute(f"PREPARE TRANSACTION '{gid}'")
            prepared = True
        finally:
            await two_phase.close()  # the prepared transaction outlives its session
        run.nemesis.nemesis("xmin-held", "postgres")
        run.start_broker("b1")
        await run.start_subscriber("s1", queue)
        load(run, queue, producer_brokers=("b1",))
        await run.progress(40)
        horizon = int(
            await checker.fetchval("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
        )
        assert horizon <= held, "the long transaction no longer holds the horizon"
        first_event = await checker.fetchval(
            "SELECT min(xid) FROM pgqueue_events WHERE namespace = $1 AND queue = $2",
            run.namespace,
            queue,
        )
        assert first_event is not None and int(first_event) > held
        await checker.execute(f"ROLLBACK PREPARED '{gid}'")
        prepared = False
        await long_tx.execute("ROLLBACK")
        run.nemesis.nemesis("xmin-held", "postgres", "end")
        await run.progress(10)
        report = await run.finish(backoff_ms=POISON["backoff"])
    finally:
        if prepared:
            await checker.execute(f"ROLLBACK PREPARED '{gid}'")
        await long_tx.close()
        await checker.close()
    assert_safe(report)
    assert report.faults["xmin-held"] == 1
    # a transaction that began before every event does not hold their delivery back
    assert report.max_event_delay_s is not None and report.max_event_delay_s < 3.0, report


STORM_POOL = 4  # --pool-size of each broker in the storm test
STORM_BROKERS = ("b1", "b2", "b3")


class ConnectionCensus:
    """Samples pg_stat_activity: the most connections each broker held at once,
    and when each broker's LISTEN connections started."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.most: dict[str, int] = defaultdict(int)
        self.listen_started: dict[str, dict[int, float]] = defaultdict(dict)
        self.samples = 0

    async def sample(self) -> None:
        conn = await asyncpg.connect(self.dsn)
        try:
            rows = await conn.fetch(
                "SELECT application_name AS app, pid, query ILIKE 'LISTEN%' AS listen,"
                " extract(epoch FROM backend_start)::float8 AS started"
                " FROM pg_stat_activity WHERE application_name LIKE 'pgqueue:%'"
            )
        finally:
            await conn.close()
        counts: dict[str, int] = defaultdict(int)
        for row in rows:
            counts[row["app"]] += 1
            if row["listen"]:
                self.listen_started[row["app"]][row["pid"]] = row["started"]
        for app, count in counts.items():
            self.most[app] = max(self.most[app], count)
        self.samples += 1

    async def watch(self, interval: float = 0.05) -> None:
        """Sample until cancelled (a refused connection while the server starts is skipped)."""
        while True:
            with contextlib.suppress(OSError, asyncpg.PostgresError):
                await self.sample()
            await asyncio.sleep(interval)


async def test_a_connection_storm_after_postgres_comes_back_stays_within_the_pools(
    own_postgres: tuple[EmbeddedPostgres, str], tmp_path: Path
) -> None:
    # PostgreSQL down for 3 s under load: every request of every client fails
    # and is retried, every broker's pool and LISTEN connection breaks.  When
    # it is back, each broker holds at most its pool plus its LISTEN
    # connection, the LISTEN reconnects are spread by their jitter, and the
    # brokers serve again.
    server, dsn = own_postgres
    run = FaultRun(
        dsn, "storm", tmp_path / "run", label="pg-down storm", client_options="timeout=10"
    )
    census = ConnectionCensus(dsn)
    watcher: asyncio.Task[None] | None = None
    try:
        queue = "q-storm"
        await run.start_brokers(*STORM_BROKERS, args=("--pool-size", str(STORM_POOL)))
        await run.start_subscriber("s1", queue)
        for worker in ("w1", "w2", "w3"):
            run.start_worker(worker, queue, concurrency=8, lock_ms=2_000, work_ms=30)
        for producer in ("p1", "p2"):
            run.start_producer(
                producer, queue, work_ms=30, poison_every=25, poison_options=POISON, pause=0.01
            )
        await run.progress(20)
        await census.sample()
        before = {app: set(pids) for app, pids in census.listen_started.items()}
        run.nemesis.nemesis("pg-down", "postgres")
        await asyncio.to_thread(server.stop_server)
        await asyncio.sleep(3)  # the outage's duration
        await asyncio.to_thread(server.start_server)
        back = time.time()
        run.nemesis.nemesis("pg-down", "postgres", "end")
        watcher = asyncio.create_task(census.watch(), name="census")
        await run.progress(30, timeout=90)

        def listening_again() -> bool:
            return all(
                set(census.listen_started[f"pgqueue:{b}"]) - before.get(f"pgqueue:{b}", set())
                for b in STORM_BROKERS
            )

        await eventually(listening_again, timeout=30, message="every broker LISTENs again")
        watcher.cancel()
        report = await run.finish(backoff_ms=POISON["backoff"])
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        await run.abort()
    assert_safe(report)
    assert census.samples > 10
    most = {b: census.most[f"pgqueue:{b}"] for b in STORM_BROKERS}
    assert all(0 < n <= STORM_POOL + 1 for n in most.values()), most  # the pool + LISTEN
    reconnected = {
        b: min(
            t
            for pid, t in census.listen_started[f"pgqueue:{b}"].items()
            if pid not in before.get(f"pgqueue:{b}", set())
        )
        for b in STORM_BROKERS
    }
    assert all(t >= back - 1 for t in reconnected.values()), (back, reconnected)
    spread = max(reconnected.values()) - min(reconnected.values())
    assert spread > 0.05, f"LISTEN reconnects not jittered: {reconnected}"
    print(f"storm: most connections {most}, LISTEN reconnects spread {spread:.2f}s")
