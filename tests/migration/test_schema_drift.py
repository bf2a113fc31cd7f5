"""Schema drift: a fresh ``alembic upgrade head`` is exactly migrations/schema.sql."""

from __future__ import annotations

import subprocess

import psycopg
import pytest

from pgqueue.db.schema import SCHEMA_VERSION, migrate
from pgqueue.db.schema_dump import dump_schema_at
from pgqueue.errors import SchemaError
from tests.migration.schema_support import (
    REPO,
    assert_schema_is_committed,
    committed_schema,
    version_rows,
)


def test_upgrade_head_on_an_empty_database_produces_exactly_schema_sql(empty_db_dsn: str) -> None:
    migrate(empty_db_dsn)
    assert version_rows(empty_db_dsn) == [SCHEMA_VERSION]
    assert_schema_is_committed(empty_db_dsn)


def test_schema_sql_is_valid_sql_that_recreates_the_same_schema(empty_db_dsn: str) -> None:
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute(committed_schema().encode())
    assert_schema_is_committed(empty_db_dsn)


def test_the_dump_covers_what_a_migration_could_change(empty_db_dsn: str) -> None:
    migrate(empty_db_dsn)
    before = dump_schema_at(empty_db_dsn)
    changes = [
        "CREATE INDEX pgqueue_jobs_extra_idx ON pgqueue_jobs (name)",
        "ALTER TABLE pgqueue_queues ADD COLUMN note text COLLATE \"C\" DEFAULT 'x'",
        "ALTER TABLE pgqueue_queues ALTER COLUMN stall_config SET NOT NULL",
        "ALTER TABLE pgqueue_workers SET (fillfactor = 70)",
        "ALTER TABLE pgqueue_workers ADD CONSTRAINT pgqueue_workers_c CHECK (concurrency > 0)",
        "CREATE OR REPLACE FUNCTION pgqueue_epoch_us(ts timestamptz) RETURNS bigint"
        " LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT"
        " RETURN (extract(epoch FROM ts) * 1000001)::bigint",
        "CREATE SEQUENCE pgqueue_other_seq",
        "ALTER TABLE pgqueue_jobs ALTER COLUMN priority TYPE bigint",
    ]
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        for change in changes:
            conn.execute(change.encode())
            after = dump_schema_at(empty_db_dsn)
            assert after != before, f"the dump missed: {change}"
            before = after


def test_the_dump_ignores_other_objects_and_the_version_row(empty_db_dsn: str) -> None:
    migrate(empty_db_dsn)
    before = dump_schema_at(empty_db_dsn)
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE app_orders (id int PRIMARY KEY)")
        conn.execute("CREATE FUNCTION app_fn() RETURNS int LANGUAGE sql RETURN 1")
        conn.execute("UPDATE pgqueue_alembic_version SET version_num = '9999'")
        conn.execute("INSERT INTO pgqueue_queues (namespace, queue) VALUES ('n', 'q')")
    assert dump_schema_at(empty_db_dsn) == before


def test_the_dump_refuses_relations_it_cannot_render(empty_db_dsn: str) -> None:
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE pgqueue_parts (id int) PARTITION BY RANGE (id)")
    with pytest.raises(SchemaError, match="cannot dump pgqueue_parts"):
        dump_schema_at(empty_db_dsn)


def test_dump_schema_script_writes_the_dump_of_a_database(empty_db_dsn: str) -> None:
    migrate(empty_db_dsn)
    result = subprocess.run(
        [str(REPO / "scripts" / "dump-schema"), empty_db_dsn, "-o", "-"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert result.stdout == committed_schema()
