"""Broker faults on real processes: kill -9, SIGSTOP past the session lease,
SIGTERM during load and a rolling restart of every broker, and brokers whose
clocks are skewed by minutes (libfaketime).

Workers are processes of their own, producers and an event subscriber run in
the test; every run ends with the checker's headline and its safety bar.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import asyncpg
import pytest

from pgqueue.client.connection import Connection
from pgqueue.testing import eventually
from pgqueue.testing.history import read_history
from tests.faults.harness import SESSION_STALE_MS, FaultRun, assert_safe

pytestmark = pytest.mark.timeout(300)

POISON = {"attempts": 3, "backoff": 100}


async def two_brokers_under_load(run: FaultRun, queue: str) -> None:
    """b1 and b2; w1 knows only b1 (its leases live and die with b1), w2 knows
    both; a steady producer through both, every 25th job a poison job."""
    await run.start_brokers("b1", "b2")
    run.start_worker("w1", queue, brokers=["b1"], concurrency=4, lock_ms=2_000, work_ms=50)
    run.start_worker("w2", queue, concurrency=4, lock_ms=2_000, work_ms=50)
    run.start_producer("p1", queue, work_ms=50, poison_every=25, poison_options=POISON, pause=0.02)


async def test_kill_9_of_brokers_holding_leases_loses_nothing_and_fences_every_late_ack(
    fault_run: Callable[..., FaultRun],
) -> None:
    run = fault_run(label="kill-9 brokers")
    queue = "q-kill"
    await two_brokers_under_load(run, queue)
    await run.start_subscriber("s1", queue)
    await run.progress(20)
    run.kill_broker("b1")  # w1's leases, and connections of w2, p1 and s1, die with it
    await run.progress(20)
    run.restart_broker("b1")
    await run.progress(20)
    run.kill_broker("b2")
    await run.progress(20)
    run.restart_broker("b2")
    await run.progress(20)
    report = await run.finish(backoff_ms=POISON["backoff"])
    assert_safe(report)
    assert report.faults["kill"] == 2 and report.dlq_expected > 0


async def test_a_broker_paused_past_its_session_lease_loses_nothing(
    fault_run: Callable[..., FaultRun],
) -> None:
    # A paused broker keeps its sockets open: only silence tells.  A connection
    # whose requests hear nothing for the liveness timeout (2 s here; the
    # request timeout stays 30 s) is pinged, dropped when the ping is not
    # answered either, and its requests fail over to b2 (pushes with a custom
    # id are sent again) or end as indeterminate.
    run = fault_run(label="sigstop-broker", client_options="liveness_timeout=2")
    queue = "q-stop-broker"
    await two_brokers_under_load(run, queue)
    await run.start_subscriber("s1", queue, brokers=["b2"])
    await run.progress(20)
    run.stop("b1")
    # The fault's duration: past the session's staleness, so b2 reaps the leases
    # of b1's connections; b1, resumed, finds its session stale or taken.
    await _hold(SESSION_STALE_MS / 1000 + 2)
    run.resume("b1")
    await run.progress(30, timeout=90)
    report = await run.finish(backoff_ms=POISON["backoff"])
    assert_safe(report)
    longest = longest_push_s(run, "p1")
    print(f"longest push attempt {longest:.1f}s (request timeout 30 s, liveness 2 s)")
    assert longest < 8, longest


async def test_sigterm_under_load_and_a_rolling_restart_of_every_broker_lose_nothing(
    fault_run: Callable[..., FaultRun],
) -> None:
    run = fault_run(label="sigterm + rolling restart")
    queue = "q-rolling"
    await two_brokers_under_load(run, queue)
    await run.start_subscriber("s1", queue)
    await run.progress(20)
    for name in ("b1", "b2", "b1"):
        run.terminate_broker(name)  # the graceful drain, jobs in flight
        await run.progress(10)
        run.restart_broker(name)
        await run.progress(10)
    report = await run.finish(backoff_ms=POISON["backoff"])
    assert_safe(report)
    assert report.faults["sigterm"] == 3


FAKETIME_LIBRARIES = (
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
)
SKEW_S = 300


def skewed_clock(offset: str) -> dict[str, str]:
    """The environment of a process whose wall clock is ``offset`` off (libfaketime;
    its monotonic clock stays true, as under a wrong NTP setting)."""
    library = next((p for p in FAKETIME_LIBRARIES if Path(p).exists()), None)
    if library is None:
        if os.environ.get("CI"):
            pytest.fail("libfaketime is not installed (.ci/run installs it)")
        pytest.skip("libfaketime is not installed (apt-get install -y faketime)")
    return {"LD_PRELOAD": library, "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


async def broker_clock_offset_s(run: FaultRun, name: str) -> float:
    """How far broker ``name``'s wall clock is from ours (its Ping answer's time)."""
    conn = await Connection.open("127.0.0.1", run.brokers[name].tcp_port)
    try:
        answer = await conn.call("Ping", {})
    finally:
        await conn.close()
    return float(answer["data"]["time"]) / 1000 - time.time()


async def test_brokers_with_clocks_skewed_by_minutes_keep_leases_right(
    fault_run: Callable[..., FaultRun], db_dsn: str
) -> None:
    # Leases, session staleness and backoff are decided on the database clock:
    # a broker five minutes ahead must not expire live leases (w2's jobs would
    # stall and its acks be refused), one five minutes behind must not keep
    # dead ones (w1's jobs would stay stuck past the drain).
    run = fault_run(label="clock skew")
    queue = "q-clock-skew"
    await asyncio.gather(  # whichever leads maintenance, its clock is off
        run.start_broker_async("b1", env=skewed_clock(f"+{SKEW_S}s")),
        run.start_broker_async("b2", env=skewed_clock(f"-{SKEW_S}s")),
    )
    assert abs(await broker_clock_offset_s(run, "b1") - SKEW_S) < 60
    assert abs(await broker_clock_offset_s(run, "b2") + SKEW_S) < 60
    run.start_worker("w1", queue, concurrency=4, lock_ms=2_000, work_ms=50)
    run.start_worker("w2", queue, concurrency=4, lock_ms=2_000, work_ms=50)
    run.start_producer("p1", queue, work_ms=50, poison_every=25, poison_options=POISON, pause=0.02)
    await run.start_subscriber("s1", queue)
    await run.progress(20)
    # Stopped past its 2 s lease while it holds a job: its jobs must stall on the
    # database clock (stopped between two jobs, it would hold none to stall).
    await stop_while_holding(run, "w1")
    await _hold(3.5)
    run.resume("w1")
    await run.progress(20)
    report = await run.finish(backoff_ms=POISON["backoff"])
    assert_safe(report)
    conn = await asyncpg.connect(db_dsn)
    try:
        stalled = {
            r["job_id"]
            for r in await conn.fetch(
                "SELECT job_id FROM pgqueue_events WHERE namespace = $1 AND type = 'stalled'",
                run.namespace,
            )
        }
    finally:
        await conn.close()
    held_by_w1 = {e["job_id"] for e in run.executions("w1")}
    assert stalled and stalled <= held_by_w1, (stalled - held_by_w1, report.headline())


def longest_push_s(run: FaultRun, producer: str) -> float:
    """The longest time one push attempt of ``producer`` waited for its outcome."""
    began: dict[str, float] = {}
    longest = 0.0
    for record in read_history([run.history_dir / f"{producer}.jsonl"]):
        if record.get("kind") != "enqueue":
            continue
        cid = str(record.get("cid"))
        if record.get("type") == "invoke":
            began[cid] = float(record["t"])
        elif cid in began:
            longest = max(longest, float(record["t"]) - began.pop(cid))
    return longest


def jobs_in_hand(run: FaultRun, worker: str) -> set[tuple[str, int]]:
    """The (job, fence) executions ``worker`` started and has not finished, by its
    history (written unbuffered, so a stopped worker's file is complete)."""
    started: set[tuple[str, int]] = set()
    ended: set[tuple[str, int]] = set()
    path = run.history_dir / f"{worker}.jsonl"
    for record in read_history([path]) if path.exists() else []:
        key = (str(record.get("job_id")), int(record.get("fence") or 0))
        if record.get("kind") == "exec":
            started.add(key)
        elif record.get("kind") in ("ack", "fail"):
            ended.add(key)
    return started - ended


async def stop_while_holding(run: FaultRun, worker: str) -> None:
    """SIGSTOP ``worker`` at an instant it holds at least one job."""

    async def stopped_holding() -> bool:
        run.stop(worker)
        if jobs_in_hand(run, worker):
            return True
        run.resume(worker)
        return False

    await eventually(stopped_holding, timeout=30, interval=0.01, message=f"{worker} holds a job")


async def _hold(seconds: float) -> None:
    await asyncio.sleep(seconds)
