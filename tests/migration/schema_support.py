"""Helpers of the migration tests: alembic by revision, the committed dump, object lists."""

from __future__ import annotations

import difflib
from pathlib import Path

import psycopg
from alembic import command
from alembic.config import Config as AlembicConfig

from pgqueue.db.schema import migrations_dir
from pgqueue.db.schema_dump import dump_schema_at

REPO = Path(__file__).resolve().parents[2]
SCHEMA_SQL = REPO / "migrations" / "schema.sql"


def alembic_config(dsn: str) -> AlembicConfig:
    """The configuration that ``pgqueue migrate`` uses, for stepping revision by revision."""
    config = AlembicConfig()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["dsn"] = dsn
    return config


def upgrade(dsn: str, revision: str) -> None:
    command.upgrade(alembic_config(dsn), revision)


def downgrade(dsn: str, revision: str) -> None:
    command.downgrade(alembic_config(dsn), revision)


def committed_schema() -> str:
    return SCHEMA_SQL.read_text(encoding="utf-8")


def schema_diff(expected: str, actual: str) -> str:
    """A unified diff for an assertion message."""
    lines = difflib.unified_diff(
        expected.splitlines(keepends=True),
        actual.splitlines(keepends=True),
        "migrations/schema.sql",
        "fresh upgrade",
    )
    return "".join(lines)


def assert_schema_is_committed(dsn: str) -> None:
    actual = dump_schema_at(dsn)
    expected = committed_schema()
    assert actual == expected, (
        "the schema differs from migrations/schema.sql; if the migration is right, run "
        "scripts/dump-schema and commit the file:\n" + schema_diff(expected, actual)
    )


def pgqueue_objects(dsn: str) -> set[str]:
    """Every relation, function and standalone type named pgqueue_* in the current schema."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            r"""
            SELECT c.relname FROM pg_class c
            WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'pgqueue\_%'
            UNION ALL
            SELECT p.proname FROM pg_proc p
            WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'pgqueue\_%'
            UNION ALL
            SELECT t.typname FROM pg_type t
            WHERE t.typnamespace = current_schema()::regnamespace AND t.typname LIKE 'pgqueue\_%'
              AND t.typrelid = 0 AND t.typelem = 0
            """
        ).fetchall()
    return {row[0] for row in rows}


def version_rows(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [row[0] for row in conn.execute("SELECT version_num FROM pgqueue_alembic_version")]
