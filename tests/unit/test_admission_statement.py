"""Which insert statement a batch takes: only a batch that cannot conflict skips
``ON CONFLICT`` (``job_insert_fresh``)."""

from __future__ import annotations

import asyncpg

from pgqueue.db.errormap import NotifyQueueFull, translate
from pgqueue.db.queries import Q
from pgqueue.manager.admission import _all_fresh, _plan
from pgqueue.manager.options import JobSpec


def _spec(**fields: object) -> JobSpec:
    return JobSpec(queue="q", name="n", data_json="{}", **fields)  # type: ignore[arg-type]


def test_generated_ids_without_unique_keys_are_fresh() -> None:
    assert _all_fresh(_plan([_spec(), _spec()]))


def test_a_custom_id_or_a_unique_key_makes_the_batch_conflict_aware() -> None:
    assert not _all_fresh(_plan([_spec(), _spec(id="a", custom_id="a")]))
    assert not _all_fresh(_plan([_spec(unique_key="k")]))


def test_the_fresh_statement_is_the_batch_statement_without_on_conflict() -> None:
    assert "ON CONFLICT DO NOTHING\n    RETURNING id, queue" in Q.job_insert_batch.sql
    assert "ON CONFLICT" not in Q.job_insert_fresh.sql.split("registered AS")[0]
    assert Q.job_insert_fresh.params == Q.job_insert_batch.params


def test_the_one_row_statement_takes_the_batch_columns_as_scalars() -> None:
    batch = [p for p in Q.job_insert_fresh.params if not p.endswith("_batch") and p != "ids"]
    assert Q.job_insert_one.params == ("namespace", "id", *batch[1:])
    assert Q.job_insert_one_known.params == Q.job_insert_one.params
    assert "unnest" not in Q.job_insert_one.sql


def test_only_the_known_queue_statement_skips_the_registry_row() -> None:
    assert "INSERT INTO pgqueue_queues" in Q.job_insert_one.sql
    assert "INSERT INTO pgqueue_queues" in Q.job_insert_fresh.sql
    assert "INSERT INTO pgqueue_queues" not in Q.job_insert_one_known.sql


def test_the_notifying_twins_are_the_one_row_statements_with_their_hint() -> None:
    for plain, notifying in (
        (Q.job_insert_one, Q.job_insert_one_notify),
        (Q.job_insert_one_known, Q.job_insert_one_known_notify),
    ):
        assert notifying.params == (*plain.params, "sender")
        assert notifying.sql.split("\nSELECT n.id")[0] == plain.sql.split("\nSELECT n.id")[0]
        assert "pg_notify" in notifying.sql and "pg_notify" not in plain.sql


def test_a_full_notification_queue_is_its_own_error() -> None:
    full = asyncpg.exceptions.ProgramLimitExceededError(
        "too many notifications in the NOTIFY queue"
    )
    assert isinstance(translate(full, write_sent=True), NotifyQueueFull)
    other = asyncpg.exceptions.ProgramLimitExceededError("index row size exceeds maximum")
    assert not isinstance(translate(other, write_sent=True), NotifyQueueFull)
