"""Job control: cancel, update data, priority, promote, discard."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from pgqueue.errors import (
    AlreadyFinalized,
    InvalidState,
    JobCancelled,
    JobNotFound,
    LeaseLost,
    ValidationError,
)
from pgqueue.manager.models import AckItem
from pgqueue.manager.reads import NO_RESULT
from pgqueue.protocol.job_view import job_view
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.helpers import count_rows, events_of, sql, sql_value


async def test_remove_deletes_a_waiting_job_with_a_removed_event(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1)
    await manager.add_log(job_id, "hello")
    await manager.remove(job_id)
    assert await manager.get_state(job_id) == "unknown"
    assert await count_rows(db_dsn, "pgqueue_job_logs", namespace) == 0
    assert await events_of(db_dsn, namespace, job_id) == ["pushed", "removed"]
    payload = await sql_value(
        db_dsn,
        "SELECT payload::text FROM pgqueue_events WHERE job_id = $1 AND type = 'removed'",
        job_id,
    )
    assert '"prev": "waiting"' in payload


async def test_remove_deletes_a_delayed_job(manager: PostgresQueueManager) -> None:
    job_id = await manager.push("q", "n", 1, delay=60_000)
    await manager.remove(job_id)
    assert await manager.get_state(job_id) == "unknown"


async def test_cancelling_an_active_job_ends_it_and_its_heartbeat_says_cancelled(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.want_active_events("q")  # the claims' events are written for it
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.add_log(job_id, "working")
    await manager.remove(job_id)
    assert await manager.get_state(job_id) == "unknown"
    assert await manager.get_job(job_id) is None
    assert await count_rows(db_dsn, "pgqueue_job_logs", namespace) == 0
    assert await events_of(db_dsn, namespace, job_id) == ["pushed", "active", "removed"]
    payload = await sql_value(
        db_dsn,
        "SELECT payload::text FROM pgqueue_events WHERE job_id = $1 AND type = 'removed'",
        job_id,
    )
    assert '"prev": "active"' in payload and '"reason": "cancel"' in payload
    [renewal] = await manager.extend_leases([(job_id, claim.token)], 30_000)
    assert (renewal.applied, renewal.reason) == (False, "cancelled")
    with pytest.raises(JobCancelled, match=rf"^Job {job_id} was cancelled$"):
        await manager.heartbeat(job_id, claim.token)
    [forged] = await manager.extend_leases([(job_id, "1:not-issued")], 30_000)
    assert forged.reason == "lease-lost"
    [ack] = await manager.ack_batch([AckItem(job_id, claim.token, "late")])
    assert (ack.applied, ack.reason) == (False, "already-finalized")
    with pytest.raises(AlreadyFinalized):
        await manager.fail(job_id, claim.token, "late failure")
    assert await manager.get_state(job_id) == "unknown"
    assert await manager.get_result(job_id) is NO_RESULT


async def test_a_cancelled_active_jobs_custom_id_starts_a_new_generation(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1, job_id="once")
    await manager.pull_batch("q", 1)
    await manager.remove(job_id)
    again = await manager.push("q", "n", 2, job_id="once")
    assert again == "once" and await manager.get_state(again) == "waiting"


async def test_cancelling_an_active_job_others_depend_on_is_refused(
    manager: PostgresQueueManager,
) -> None:
    target = await manager.push("q", "first", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.push("q", "second", 2, depends_on=[target])
    with pytest.raises(InvalidState, match="1 live job"):
        await manager.remove(target)
    assert await manager.get_state(target) == "active"
    await manager.ack(target, claim.token, "done")


async def test_remove_of_an_unknown_job_says_not_found_or_cannot_be_cancelled(
    manager: PostgresQueueManager,
) -> None:
    with pytest.raises(JobNotFound, match=r"^Job not found or cannot be cancelled$"):
        await manager.remove("nope")


async def test_remove_of_a_job_that_others_depend_on_is_refused_and_they_keep_waiting(
    manager: PostgresQueueManager,
) -> None:
    target = await manager.push("q", "first", 1)
    dependent = await manager.push("q", "second", 2, depends_on=[target])
    with pytest.raises(InvalidState, match="1 live job"):
        await manager.remove(target)
    assert await manager.get_state(target) == "waiting"
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(claim.id, claim.token)
    assert await manager.get_state(dependent) == "waiting", "the edge survived the refusal"


async def test_removing_the_dependents_first_lets_the_target_be_removed(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    target = await manager.push("q", "first", 1)
    dependent = await manager.push("q", "second", 2, depends_on=[target])
    await manager.remove(dependent)
    await manager.remove(target)
    assert await count_rows(db_dsn, "pgqueue_dependencies", namespace) == 0
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0


async def test_remove_of_a_completed_job_hides_it_but_keeps_its_completion_proof(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(job_id, claim.token, 5)
    await manager.remove(job_id)
    assert await manager.get_state(job_id) == "unknown"
    later = await manager.push("q", "after", None, depends_on=[job_id])
    assert await manager.get_state(later) == "waiting"
    with pytest.raises(JobNotFound):
        await manager.remove(job_id)


async def test_remove_of_a_failed_job_deletes_its_dlq_entry(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1, attempts=1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(job_id, claim.token, "boom")
    assert await count_rows(db_dsn, "pgqueue_dlq", namespace) == 1
    await manager.remove(job_id)
    assert await count_rows(db_dsn, "pgqueue_dlq", namespace) == 0
    assert await count_rows(db_dsn, "pgqueue_finished", namespace) == 0


async def test_remove_frees_the_unique_key(manager: PostgresQueueManager) -> None:
    first = await manager.push("q", "n", 1, unique_key="k")
    await manager.remove(first)
    second = await manager.push("q", "n", 2, unique_key="k")
    assert second != first


async def test_update_data_replaces_the_data_of_a_waiting_job(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", {"v": 1})
    await manager.update_data(job_id, {"v": 2})
    [claim] = await manager.pull_batch("q", 1)
    assert claim.data == {"v": 2}
    assert "updated" in await events_of(db_dsn, namespace, job_id)


async def test_update_data_of_a_finished_job_is_refused(manager: PostgresQueueManager) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(job_id, claim.token)
    with pytest.raises(InvalidState, match=r"^Job not found or cannot be updated$"):
        await manager.update_data(job_id, 2)
    with pytest.raises(JobNotFound, match=r"^Job not found or cannot be updated$"):
        await manager.update_data("nope", 2)


async def test_update_data_refuses_data_that_is_not_json(manager: PostgresQueueManager) -> None:
    job_id = await manager.push("q", "n", 1)
    with pytest.raises(ValidationError) as caught:
        await manager.update_data(job_id, {"bad": object()})
    assert caught.value.field == "data"
    [claim] = await manager.pull_batch("q", 1)
    assert claim.data == 1


async def test_change_priority_reorders_the_claims(manager: PostgresQueueManager) -> None:
    low = await manager.push("q", "low", 1)
    high = await manager.push("q", "high", 2)
    await manager.change_priority(low, 10)
    claims = await manager.pull_batch("q", 2)
    assert [c.id for c in claims] == [low, high]


async def test_change_priority_with_lifo_puts_the_job_first_among_equals(
    manager: PostgresQueueManager,
) -> None:
    first = await manager.push("q", "a", 1)
    second = await manager.push("q", "b", 2)
    await manager.change_priority(second, 0, lifo=True)
    claims = await manager.pull_batch("q", 2)
    assert [c.id for c in claims] == [second, first]


async def test_change_priority_of_an_active_job_says_not_in_queue(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    await manager.pull_batch("q", 1)
    with pytest.raises(InvalidState, match=r"^Job not found or not in queue$"):
        await manager.change_priority(job_id, 5)
    with pytest.raises(JobNotFound, match=r"^Job not found or not in queue$"):
        await manager.change_priority("nope", 5)


async def test_change_priority_refuses_an_out_of_range_priority(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    with pytest.raises(ValidationError, match="priority must be at most 1000000"):
        await manager.change_priority(job_id, 10**9)


async def test_promote_makes_a_delayed_job_claimable_now(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.want_active_events("q")  # the claims' events are written for it
    job_id = await manager.push("q", "n", 1, delay=3_600_000)
    assert await manager.pull_batch("q", 1) == []
    await manager.promote(job_id)
    [claim] = await manager.pull_batch("q", 1)
    assert claim.id == job_id
    assert await events_of(db_dsn, namespace, job_id) == ["pushed", "waiting", "active"]


async def test_promote_of_a_waiting_job_says_not_delayed(manager: PostgresQueueManager) -> None:
    job_id = await manager.push("q", "n", 1)
    with pytest.raises(InvalidState, match=r"^Job not found or not delayed$"):
        await manager.promote(job_id)
    with pytest.raises(JobNotFound, match=r"^Job not found or not delayed$"):
        await manager.promote("nope")


async def test_promote_wakes_a_long_polling_claim_on_another_broker(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a", poll_interval_ms=5_000) as a,
        start_manager(db_dsn, namespace, broker_id="b", poll_interval_ms=5_000) as b,
    ):
        job_id = await a.push("q", "n", 1, delay=3_600_000)
        loop = asyncio.get_running_loop()
        started = loop.time()
        pull = asyncio.create_task(b.pull_batch("q", 1, timeout_ms=10_000))
        await eventually(lambda: b.notifier.waiter_count("q") == 1, message="claim waits")
        await a.promote(job_id)
        [claim] = await pull
        assert claim.id == job_id
        assert loop.time() - started < 4.0, "woken by the NOTIFY hint, not the poll"


async def test_promote_jobs_promotes_up_to_count_soonest_first(
    manager: PostgresQueueManager,
) -> None:
    soon = await manager.push("q", "soon", 1, delay=60_000)
    await manager.push("q", "later", 2, delay=120_000)
    await manager.push("other", "elsewhere", 3, delay=60_000)
    assert await manager.promote_jobs("q", 1) == 1
    assert await manager.get_state(soon) == "waiting"
    assert await manager.promote_jobs("q") == 1
    assert await manager.count("q") == 2
    assert (await manager.get_counts("other")).delayed == 1


async def test_discard_dead_letters_an_active_job_and_its_worker_ack_is_rejected(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1, attempts=5)
    [claim] = await manager.pull_batch("q", 1)
    await manager.discard(job_id)
    assert await manager.get_state(job_id) == "failed"
    reason = await sql_value(
        db_dsn,
        "SELECT reason FROM pgqueue_dlq WHERE namespace = $1 AND job_id = $2",
        namespace,
        job_id,
    )
    assert reason == "explicit_fail"
    with pytest.raises(AlreadyFinalized):
        await manager.ack(job_id, claim.token)


async def test_discard_with_a_stale_token_is_rejected_and_changes_nothing(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    with pytest.raises(LeaseLost):
        await manager.discard(job_id, "1:not-the-token")
    assert await manager.get_state(job_id) == "active"
    await manager.discard(job_id, claim.token)
    assert await manager.get_state(job_id) == "failed"


async def test_discard_of_a_waiting_job_dead_letters_it(manager: PostgresQueueManager) -> None:
    job_id = await manager.push("q", "n", 1)
    await manager.discard(job_id)
    assert await manager.get_state(job_id) == "failed"
    assert await manager.pull_batch("q", 1) == []


async def test_discard_of_an_unknown_or_finished_job_is_refused(
    manager: PostgresQueueManager,
) -> None:
    with pytest.raises(JobNotFound, match=r"^Job not found$"):
        await manager.discard("nope")
    job_id = await manager.push("q", "n", 1)
    await manager.discard(job_id)
    with pytest.raises(InvalidState, match="already failed"):
        await manager.discard(job_id)


async def test_control_operations_refuse_a_malformed_job_id_and_write_nothing(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    for bad in ("", "x" * 300, 5):
        with pytest.raises(ValidationError) as caught:
            await manager.remove(bad)  # type: ignore[arg-type]
        assert caught.value.field == "id"
    assert await sql(db_dsn, "SELECT 1 FROM pgqueue_events WHERE namespace = $1", namespace) == []


async def test_the_job_view_reports_stall_timeout_and_the_last_heartbeat_not_the_deadline(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1, stall_timeout=5_000)
    waiting = job_view(await _job(manager, job_id))
    assert waiting["stallTimeout"] == 5_000
    assert waiting["lastHeartbeat"] == waiting["createdAt"], "never claimed"
    [claim] = await manager.pull_batch("q", 1)
    claimed = job_view(await _job(manager, job_id))
    assert claimed["lastHeartbeat"] == claimed["startedAt"], "the claim counts as one"
    await eventually(
        lambda: sql_value(
            db_dsn, "SELECT statement_timestamp() > $1::timestamptz", _instant(claimed["startedAt"])
        ),
        message="the database clock moved on",
    )
    [renewed] = await manager.extend_leases([(job_id, claim.token)], 120_000)
    assert renewed.applied
    seen = job_view(await _job(manager, job_id))
    stored = await sql_value(
        db_dsn,
        "SELECT extract(epoch FROM last_heartbeat_at) * 1000 FROM pgqueue_jobs"
        " WHERE namespace = $1 AND id = $2",
        namespace,
        job_id,
    )
    assert seen["lastHeartbeat"] == pytest.approx(float(stored), abs=0.01)
    assert claimed["startedAt"] < seen["lastHeartbeat"]
    lease_until = (await _job(manager, job_id)).lease_until
    assert lease_until is not None and seen["lastHeartbeat"] < lease_until - 100_000


async def _job(manager: PostgresQueueManager, job_id: str) -> Any:
    job = await manager.get_job(job_id)
    assert job is not None
    return job


def _instant(ms: float) -> Any:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
