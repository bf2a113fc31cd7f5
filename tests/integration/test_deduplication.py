"""Deduplication and debounce: a key with a TTL outlives its job (throttle),
one without goes with it (simple mode); debounce ids are keys with a TTL.

The live cases (reject, extend, replace of a live owner, expiry) are in
test_admission.py; these are the cases of a key that a finished job holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.errors import ValidationError
from pgqueue.runtime import PostgresQueueManager
from tests.helpers import clock_ahead, events_of, sql_value

HOUR = 3_600_000


async def _run(m: PostgresQueueManager, queue: str = "q") -> str:
    [claim] = await m.pull_batch(queue, 1)
    await m.ack(claim.id, claim.token, "done")
    return claim.id


async def test_a_key_with_a_ttl_is_held_after_its_job_completed(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    owner = await manager.push("q", "a", 1, unique_key="k", dedup={"ttl": HOUR})
    await _run(manager)
    assert await manager.get_state(owner) == "completed"
    again = await manager.push("q", "a", 2, unique_key="k", dedup={"ttl": HOUR})
    assert again == owner
    assert (await manager.get_counts("q")).waiting == 0
    assert events_of_type(await events_of(db_dsn, namespace, owner), "duplicated") == 1
    spec = manager.job_spec("q", "a", 3, unique_key="k", dedup={"ttl": HOUR})
    assert (await manager.push_specs([spec], now=clock_ahead(HOUR + 1_000)))[0] != owner


async def test_a_key_without_a_ttl_goes_with_its_job(manager: PostgresQueueManager) -> None:
    owner = await manager.push("q", "a", 1, unique_key="k")
    await _run(manager)
    assert await manager.push("q", "a", 2, unique_key="k") != owner


async def test_a_key_a_failed_job_holds_is_held_too(manager: PostgresQueueManager) -> None:
    owner = await manager.push("q", "a", 1, attempts=1, unique_key="k", dedup={"ttl": HOUR})
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(claim.id, claim.token, "broke")
    assert await manager.push("q", "a", 2, unique_key="k", dedup={"ttl": HOUR}) == owner


async def test_extend_moves_the_deadline_of_a_finished_holder(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    owner = await manager.push("q", "a", 1, unique_key="k", dedup={"ttl": 1000, "extend": True})
    await _run(manager)
    query = "SELECT unique_expires_at FROM pgqueue_finished WHERE namespace = $1 AND id = $2"
    before = await sql_value(db_dsn, query, namespace, owner)
    again = await manager.push("q", "a", 2, unique_key="k", dedup={"ttl": HOUR, "extend": True})
    assert again == owner
    assert (await sql_value(db_dsn, query, namespace, owner) - before).total_seconds() > 3000


async def test_replace_takes_the_key_from_a_finished_holder(
    manager: PostgresQueueManager,
) -> None:
    owner = await manager.push("q", "a", 1, unique_key="k", dedup={"ttl": HOUR})
    await _run(manager)
    new = await manager.push("q", "a", 2, unique_key="k", dedup={"ttl": HOUR, "replace": True})
    assert new != owner
    assert await manager.get_deduplication_job_id("q", "k") == new
    assert await manager.get_state(owner) == "completed"  # the finished job stays


async def test_the_deduplication_key_commands_see_a_finished_holder(
    manager: PostgresQueueManager,
) -> None:
    owner = await manager.push("q", "a", 1, unique_key="k", dedup={"ttl": HOUR})
    await _run(manager)
    assert await manager.get_deduplication_job_id("q", "k") == owner
    assert await manager.remove_deduplication_key("q", "k") == 1
    assert await manager.get_deduplication_job_id("q", "k") is None
    other = await manager.push("q", "a", 2, unique_key="k2", dedup={"ttl": HOUR})
    await _run(manager)
    assert await manager.remove_job_deduplication_key(other) is True
    assert await manager.remove_job_deduplication_key(other) is False
    assert await manager.push("q", "a", 3, unique_key="k2", dedup={"ttl": HOUR}) != other


async def test_a_debounced_push_is_dropped_within_the_ttl_with_a_debounced_event(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    first = await manager.push("q", "a", 1, debounce_id="refresh", debounce_ttl=HOUR)
    second = await manager.push("q", "a", 2, debounce_id="refresh", debounce_ttl=HOUR)
    assert second == first
    await _run(manager)
    third = await manager.push("q", "a", 3, debounce_id="refresh", debounce_ttl=HOUR)
    assert third == first, "held for the TTL, also after the job ran"
    types = await events_of(db_dsn, namespace, first)
    assert events_of_type(types, "debounced") == 2
    assert events_of_type(types, "duplicated") == 2
    assert await manager.get_deduplication_job_id("q", "refresh") == first


async def test_bullmq_deduplication_is_unique_key_and_dedup_in_one(
    manager: PostgresQueueManager,
) -> None:
    owner = await manager.push("q", "a", 1, deduplication={"id": "k", "ttl": HOUR})
    assert await manager.push("q", "a", 2, unique_key="k") == owner
    await _run(manager)
    assert await manager.push("q", "a", 3, deduplication={"id": "k"}) == owner


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"deduplication": {"ttl": 5}}, "deduplication needs an id"),
        ({"deduplication": "k"}, "deduplication must be a map"),
        ({"deduplication": {"id": "k", "keep": True}}, "deduplication has unknown keys: keep"),
        ({"deduplication": {"id": "k"}, "unique_key": "k"}, "give one"),
        ({"deduplication": {"id": "k", "extend": True}}, "extend needs a ttl"),
        ({"debounce_id": "d", "debounce_ttl": 0}, "debounce_ttl must be"),
    ],
)
async def test_bad_deduplication_options_are_refused(
    manager: PostgresQueueManager, opts: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        await manager.push("q", "a", 1, **opts)
    assert (await manager.get_counts("q")).waiting == 0


def events_of_type(types: list[str], wanted: str) -> int:
    return sum(1 for t in types if t == wanted)
