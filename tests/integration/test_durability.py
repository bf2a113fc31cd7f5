"""G1: an acknowledged push is committed; an unknown outcome is reported as such."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pgqueue.db.schema import migrate
from pgqueue.embedded import EmbeddedPostgres
from pgqueue.errors import ConfigError, IndeterminateCommit
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.fault_proxy import FaultProxy
from tests.helpers import sql, sql_value


@pytest.fixture
async def proxy(db_dsn: str) -> AsyncIterator[FaultProxy]:
    fault_proxy = FaultProxy(db_dsn)
    await fault_proxy.start()
    yield fault_proxy
    await fault_proxy.close()


def _is_bind(data: bytes) -> bool:
    """An extended-protocol request (Bind ... Execute ... Sync) of a prepared statement."""
    return data[:1] == b"B"


def _is_commit(data: bytes) -> bool:
    return b"COMMIT" in data


async def test_connection_lost_after_an_autocommit_push_was_sent_is_indeterminate(
    proxy: FaultProxy, db_dsn: str, namespace: str
) -> None:
    async with start_manager(
        proxy.dsn, namespace, broker_id="g1", pool_min_size=1, pool_max_size=1, poll_only=True
    ) as manager:
        await manager.push("q", "warm-up", None)  # the statement is now prepared
        proxy.arm(_is_bind)
        with pytest.raises(IndeterminateCommit):
            await manager.push("q", "lost-reply", {"n": 1})
        assert proxy.cut.is_set()
    committed = await sql_value(
        db_dsn,
        "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND name = 'lost-reply'",
        namespace,
    )
    assert committed == 1, "the push committed although its reply never arrived"


async def test_connection_lost_after_commit_was_sent_is_indeterminate_and_retry_is_safe(
    proxy: FaultProxy, db_dsn: str, namespace: str
) -> None:
    async with start_manager(
        proxy.dsn, namespace, broker_id="g1", pool_min_size=1, pool_max_size=1, poll_only=True
    ) as manager:
        proxy.arm(_is_commit)
        with pytest.raises(IndeterminateCommit):
            await manager.push("q", "n", {"n": 1}, job_id="order-1")
        # The documented safe retry: the same custom id again.
        assert await manager.push("q", "n", {"n": 2}, job_id="order-1") == "order-1"
    rows = await sql(db_dsn, "SELECT data FROM pgqueue_jobs WHERE namespace = $1", namespace)
    assert [row["data"] for row in rows] == ['{"n":1}']


async def test_manager_refuses_a_server_running_with_fsync_off(tmp_path: Path) -> None:
    server = EmbeddedPostgres(Path(tempfile.mkdtemp(dir=tmp_path)) / "data", cleanup="delete")
    dsn = server.start()
    try:
        await sql(dsn, "ALTER SYSTEM SET fsync = off")
        await sql(dsn, "SELECT pg_reload_conf()")
        migrate(dsn)
        with pytest.raises(ConfigError, match="fsync=off"):
            async with PostgresQueueManager.connect(dsn, namespace="x", run_maintenance=False):
                pass
        async with PostgresQueueManager.connect(
            dsn, namespace="x", run_maintenance=False, unsafe_durability=True
        ) as manager:
            assert await manager.push("q", "n", None)
    finally:
        server.stop()
