"""Migrations: downgrade/upgrade round trips, the alembic command line, concurrent
runs, and managers that refuse a schema they were not built for."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from itertools import pairwise

import psycopg
import pytest

from pgqueue.db.schema import COMPAT_SINCE, KNOWN_REVISIONS, SCHEMA_VERSION, migrate
from pgqueue.db.schema_dump import dump_schema_at
from pgqueue.errors import SchemaError
from tests.conftest import start_manager
from tests.migration.schema_support import (
    REPO,
    assert_schema_is_committed,
    downgrade,
    pgqueue_objects,
    upgrade,
    version_rows,
)

VERSION_TABLE_ONLY = {"pgqueue_alembic_version", "pgqueue_alembic_version_pkc"}


def test_downgrade_to_base_removes_everything_and_upgrade_restores_the_same_schema(
    empty_db_dsn: str,
) -> None:
    migrate(empty_db_dsn)
    migrate(empty_db_dsn, "base")
    assert pgqueue_objects(empty_db_dsn) == VERSION_TABLE_ONLY
    assert version_rows(empty_db_dsn) == []
    migrate(empty_db_dsn)
    assert version_rows(empty_db_dsn) == [SCHEMA_VERSION]
    assert_schema_is_committed(empty_db_dsn)


def test_each_downgrade_exactly_undoes_its_upgrade(empty_db_dsn: str) -> None:
    steps = ["base", *KNOWN_REVISIONS]
    upgrade(empty_db_dsn, "base")  # creates the (empty) version table only
    dumps = {"base": dump_schema_at(empty_db_dsn)}
    for revision in KNOWN_REVISIONS:
        upgrade(empty_db_dsn, revision)
        assert version_rows(empty_db_dsn) == [revision]
        dumps[revision] = dump_schema_at(empty_db_dsn)
    for lower, higher in reversed(list(pairwise(steps))):
        downgrade(empty_db_dsn, lower)
        assert dump_schema_at(empty_db_dsn) == dumps[lower], f"downgrade {higher} -> {lower}"
    assert pgqueue_objects(empty_db_dsn) == VERSION_TABLE_ONLY


def test_upgrade_head_twice_changes_nothing(empty_db_dsn: str) -> None:
    migrate(empty_db_dsn)
    migrate(empty_db_dsn)
    assert version_rows(empty_db_dsn) == [SCHEMA_VERSION]
    assert_schema_is_committed(empty_db_dsn)


def alembic_cli(*args: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "alembic", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_alembic_command_line_works_from_the_repo_root(empty_db_dsn: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PGQUEUE_DSN"}
    alembic_cli("upgrade", "head", env={**env, "PGQUEUE_DSN": empty_db_dsn})
    assert f"{SCHEMA_VERSION} (head)" in alembic_cli(
        "current", env={**env, "PGQUEUE_DSN": empty_db_dsn}
    )
    assert_schema_is_committed(empty_db_dsn)

    alembic_cli("-x", f"dsn={empty_db_dsn}", "downgrade", "base", env=env)
    assert pgqueue_objects(empty_db_dsn) == VERSION_TABLE_ONLY
    alembic_cli("-x", f"dsn={empty_db_dsn}", "upgrade", "head", env=env)
    assert_schema_is_committed(empty_db_dsn)


def test_the_alembic_command_line_without_a_dsn_says_how_to_give_one() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PGQUEUE_DSN"}
    result = subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "-x dsn=... or PGQUEUE_DSN" in result.stderr + result.stdout


CHILD = """
import sys
from pgqueue.db.schema import migrate
print("ready", flush=True)
sys.stdin.readline()
migrate(sys.argv[1])
"""


def test_concurrent_migrations_in_two_processes_both_succeed_with_one_schema(
    empty_db_dsn: str,
) -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, empty_db_dsn],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        for child in children:  # every child imported everything and waits
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
        for child in children:  # go, as close together as we can
            assert child.stdin is not None
            child.stdin.write("\n")
            child.stdin.flush()
        outcomes = [child.communicate(timeout=60) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert [child.returncode for child in children] == [0, 0, 0], [err for _, err in outcomes]
    assert version_rows(empty_db_dsn) == [SCHEMA_VERSION]
    assert_schema_is_committed(empty_db_dsn)


def test_concurrent_migrations_in_two_threads_both_succeed_with_one_schema(
    empty_db_dsn: str,
) -> None:
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def run() -> None:
        start.wait()
        try:
            migrate(empty_db_dsn)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert version_rows(empty_db_dsn) == [SCHEMA_VERSION]
    assert_schema_is_committed(empty_db_dsn)


# -- a manager checks the schema, it never creates it --------------------------


async def test_a_manager_refuses_an_empty_database_and_creates_nothing(
    empty_db_dsn: str, namespace: str
) -> None:
    with pytest.raises(SchemaError, match="run `pgqueue migrate`"):
        async with start_manager(empty_db_dsn, namespace):
            pass
    assert pgqueue_objects(empty_db_dsn) == set()


async def test_a_manager_refuses_a_schema_newer_than_it_knows(
    empty_db_dsn: str, namespace: str
) -> None:
    migrate(empty_db_dsn)
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE pgqueue_alembic_version SET version_num = '9999'")
    with pytest.raises(SchemaError, match="at revision 9999, newer than this pgqueue knows"):
        async with start_manager(empty_db_dsn, namespace):
            pass


def declare_newer_revision(dsn: str, revision: str, oldest_broker: str) -> None:
    """Make the database look migrated by a newer pgqueue whose ``revision`` declares
    that brokers from ``oldest_broker`` on can still run on it."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE pgqueue_alembic_version SET version_num = %s", (revision,))
        conn.execute(
            "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES (%s, %s)",
            (revision, oldest_broker),
        )


async def test_a_manager_runs_on_a_newer_schema_that_declares_it_compatible(
    empty_db_dsn: str, namespace: str
) -> None:
    migrate(empty_db_dsn)
    declare_newer_revision(empty_db_dsn, "9999", SCHEMA_VERSION)
    async with start_manager(empty_db_dsn, namespace) as manager:
        assert await manager.push("q", "n", {"ok": True})


async def test_a_manager_refuses_a_newer_schema_that_needs_a_newer_broker(
    empty_db_dsn: str, namespace: str
) -> None:
    migrate(empty_db_dsn)
    declare_newer_revision(empty_db_dsn, "9999", "9998")
    with pytest.raises(SchemaError, match="revision 9999 needs pgqueue of revision 9998 or newer"):
        async with start_manager(empty_db_dsn, namespace):
            pass


def test_every_revision_declares_the_oldest_broker_that_can_run_on_it(empty_db_dsn: str) -> None:
    """From the revision that brought the table on, a migration that forgets to say
    which brokers it keeps working would leave old brokers out of a rolling upgrade."""
    first = KNOWN_REVISIONS.index(COMPAT_SINCE)
    upgrade(empty_db_dsn, KNOWN_REVISIONS[first - 1])
    for revision in KNOWN_REVISIONS[first:]:
        upgrade(empty_db_dsn, revision)
        with psycopg.connect(empty_db_dsn) as conn:
            row = conn.execute(
                "SELECT oldest_broker FROM pgqueue_schema_compat WHERE revision = %s",
                (revision,),
            ).fetchone()
        assert row is not None, f"revision {revision} declares no oldest broker"
        assert row[0] in KNOWN_REVISIONS[first : KNOWN_REVISIONS.index(revision) + 1]


@pytest.mark.parametrize("revision", KNOWN_REVISIONS[:-1])
async def test_a_manager_refuses_an_older_schema_and_says_to_migrate(
    empty_db_dsn: str, namespace: str, revision: str
) -> None:
    upgrade(empty_db_dsn, revision)
    with pytest.raises(SchemaError, match=f"at revision {revision}.*run `pgqueue migrate`"):
        async with start_manager(empty_db_dsn, namespace):
            pass


async def test_a_manager_refuses_a_version_table_without_a_version(
    empty_db_dsn: str, namespace: str
) -> None:
    migrate(empty_db_dsn)
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM pgqueue_alembic_version")
    with pytest.raises(SchemaError, match="run `pgqueue migrate`"):
        async with start_manager(empty_db_dsn, namespace):
            pass


async def test_a_manager_starts_on_a_migrated_database(empty_db_dsn: str, namespace: str) -> None:
    migrate(empty_db_dsn)
    async with start_manager(empty_db_dsn, namespace) as manager:
        assert await manager.push("q", "n", {"ok": True})
