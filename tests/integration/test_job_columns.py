"""The statements that copy a job between the live and the finished table copy every column.

A new column of both tables (a job option kept in a column of its own) must be
written by each of them; this test names the statement that forgot it.
"""

from __future__ import annotations

import re

import pytest

from pgqueue.db.queries import Q
from tests.helpers import sql

# Columns a statement does not carry over, on purpose: a job sent back to
# waiting starts a fresh attempt (no start time, no claim salt); a retried
# completed job starts over (no progress, attempt log or stack trace).
FRESH_ATTEMPT = {"started_at", "token_salt"}
STARTS_OVER = FRESH_ATTEMPT | {"progress", "progress_message", "attempt_log", "stacktrace"}

COPIES = [
    ("job_finish_many", "pgqueue_finished", set()),
    ("dlq_redrive", "pgqueue_jobs", FRESH_ATTEMPT),
    ("job_retry_completed", "pgqueue_jobs", STARTS_OVER),
]


async def _shared_columns(dsn: str) -> set[str]:
    rows = await sql(
        dsn,
        "SELECT column_name, array_agg(table_name::text) AS tables"
        " FROM information_schema.columns"
        " WHERE table_name IN ('pgqueue_jobs', 'pgqueue_finished')"
        " GROUP BY column_name",
    )
    return {row["column_name"] for row in rows if len(row["tables"]) == 2}


def _inserted_columns(text: str, table: str) -> set[str]:
    match = re.search(rf"INSERT INTO {table}(?: AS \w+)? \((.*?)\)", text, re.DOTALL)
    assert match is not None, table
    return {column.strip() for column in match.group(1).split(",")}


@pytest.mark.parametrize(("query", "table", "left_out"), COPIES)
async def test_a_copy_between_the_job_tables_writes_every_shared_column(
    db_dsn: str, query: str, table: str, left_out: set[str]
) -> None:
    shared = await _shared_columns(db_dsn)
    written = _inserted_columns(getattr(Q, query).sql, table)
    assert shared - left_out - written == set(), f"{query} does not write them"
    assert left_out <= shared, "a column left out on purpose is a shared column"


async def test_a_job_read_selects_every_shared_column_of_both_tables(db_dsn: str) -> None:
    # Not part of the job's view: the claim salt, and when a deduplication
    # key's TTL ends (read by admission and the key commands, not by GetJob).
    shared = await _shared_columns(db_dsn) - {"token_salt", "unique_expires_at"}
    text = Q.job_get.sql
    for alias in ("j", "f"):
        read = set(re.findall(rf"\b{alias}\.([a-z_]+)", text))
        assert shared - read == set(), f"job_row_{'live' if alias == 'j' else 'finished'}"
