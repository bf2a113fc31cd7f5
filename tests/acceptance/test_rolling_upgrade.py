"""A rolling upgrade: after `pgqueue migrate` has run a newer release's revisions, the
old brokers stay in rotation while that revision declares them able to run on it,
and leave it (with the reason) when it does not."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from pgqueue.db.schema import SCHEMA_VERSION
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory
from tests.acceptance.http_support import http_client
from tests.helpers import sql


@pytest.fixture
async def newer_schema(db_dsn: str) -> AsyncIterator[None]:
    """The database as a newer release's `migrate` leaves it: revision 9999.  Put back
    afterwards, since the module's other tests share this database."""
    yield
    await sql(db_dsn, "DELETE FROM pgqueue_schema_compat WHERE revision = '9999'")
    await sql(db_dsn, "UPDATE pgqueue_alembic_version SET version_num = $1", SCHEMA_VERSION)


async def migrate_to_newer(db_dsn: str, oldest_broker: str) -> None:
    await sql(db_dsn, "UPDATE pgqueue_alembic_version SET version_num = '9999'")
    await sql(
        db_dsn,
        "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('9999', $1)",
        oldest_broker,
    )


async def test_an_old_broker_stays_ready_on_a_newer_schema_that_declares_it_compatible(
    brokers: BrokerFactory, db_dsn: str, newer_schema: None
) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        assert (await http.get("/readyz")).status_code == 200
        await migrate_to_newer(db_dsn, SCHEMA_VERSION)

        async def warns() -> bool:
            return "schemaNewer" in (await http.get("/readyz")).json()["warnings"]

        await eventually(warns, timeout=20, message="readyz warns of the newer schema")
        answer = await http.get("/readyz")
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["ready"] is True and body["degraded"] == []
        assert body["checks"]["schema"] == {"ok": True, "version": "9999", "broker": SCHEMA_VERSION}
        assert body["checks"]["schemaNewer"]["ok"] is False
        assert "upgrade this broker" in body["checks"]["schemaNewer"]["warning"]
        pushed = await http.post("/queues/q/jobs", json={"name": "n", "data": {"after": "migrate"}})
        assert pushed.status_code == 200, pushed.text


async def test_an_old_broker_leaves_rotation_when_the_newer_schema_needs_a_newer_broker(
    brokers: BrokerFactory, db_dsn: str, newer_schema: None
) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        assert (await http.get("/readyz")).status_code == 200
        await migrate_to_newer(db_dsn, "9999")

        async def not_ready() -> bool:
            return (await http.get("/readyz")).status_code == 503

        await eventually(not_ready, timeout=20, message="readyz leaves rotation")
        body = (await http.get("/readyz")).json()
        assert body["degraded"] == ["schema"]
        assert "needs pgqueue of revision 9999 or newer" in body["checks"]["schema"]["error"]
