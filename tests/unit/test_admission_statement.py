"""Which insert statement a batch takes: only a batch that cannot conflict skips
``ON CONFLICT`` (``job_insert_fresh``)."""

from __future__ import annotations

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
