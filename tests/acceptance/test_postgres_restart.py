"""A PostgreSQL restart under a running broker (a real ``pgqueue serve`` process on a
server this test starts itself, then stops and starts again with ``-m fast``).

Every long-lived service of the broker must come back on its own: after the
restart pushes work, an event subscriber that subscribed before it receives
events pushed after it, webhooks deliver, and ``/readyz`` is honest throughout
(503 while the database is down; 200 only when a push made then is delivered).
A request cut by the outage is answered "unavailable" or "indeterminate", never a
bare "Internal server error".
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from pgqueue.client.connection import Connection
from pgqueue.db.schema import migrate
from pgqueue.embedded import EmbeddedPostgres, dsn_for_database
from pgqueue.errors import PgQueueError, RemoteError
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory
from tests.integration.webhooks_support import Receiver

NAMESPACE = "restart"
RESTARTS = 5
CUT_MESSAGES = ("Database unavailable", "may have committed")


@pytest.fixture
def own_postgres() -> Iterator[tuple[EmbeddedPostgres, str]]:
    data_dir = Path(tempfile.mkdtemp(prefix="pgqueue-restart-pg-")) / "data"
    server = EmbeddedPostgres(data_dir, cleanup="delete")
    try:
        admin = server.start()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE restarted")
        dsn = dsn_for_database(admin, "restarted")
        migrate(dsn)
        yield server, dsn
    finally:
        server.stop()


async def _push(conn: Connection) -> str:
    reply = await conn.call("PUSH", {"queue": "q", "name": "n", "data": 1}, timeout=10)
    return str(reply["id"])


async def _event_for(sub: Connection, job_id: str, timeout: float = 20) -> dict[str, Any]:
    """The first event frame about ``job_id`` (earlier frames are skipped)."""
    async with asyncio.timeout(timeout):
        while True:
            frame = await sub.events.get()
            event = frame.get("event", frame)
            if event.get("jobId") == job_id:
                return dict(event)


async def test_a_broker_recovers_every_service_after_a_postgres_restart(
    own_postgres: tuple[EmbeddedPostgres, str],
) -> None:
    server, dsn = own_postgres
    factory = BrokerFactory(dsn, NAMESPACE, Path(tempfile.mkdtemp(prefix="pgqueue-brokers-")))
    broker = factory.start(
        "survivor", "--set", "webhook_allow_private=true", "--poll-interval-ms", "100"
    )
    http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{broker.http_port}", timeout=10)
    conn = await Connection.open("127.0.0.1", broker.tcp_port)
    sub = await Connection.open("127.0.0.1", broker.tcp_port)
    messages: list[str] = []

    async def push_works() -> str | None:
        try:
            return await _push(conn)
        except RemoteError as exc:
            messages.append(exc.message)
            return None

    try:
        async with Receiver() as receiver:
            await conn.call("AddWebhook", {"url": receiver.url, "events": ["job.pushed"]})
            await sub.call("SubscribeEvents", {"queue": "q"})
            before = await _push(conn)
            await _event_for(sub, before)
            await eventually(lambda: len(receiver.requests) == 1, timeout=15)
            assert (await http.get("/readyz")).status_code == 200

            # pg_ctl restart -m fast, under load (operations in flight on several
            # pooled connections when the server cuts them), a few times.
            load = [asyncio.create_task(_keep_pushing(push_works)) for _ in range(4)]
            try:
                for _ in range(RESTARTS):
                    await asyncio.to_thread(server.restart)
                    await eventually(push_works, timeout=30, interval=0.1, message="a push")
            finally:
                for task in load:
                    task.cancel()
                await asyncio.gather(*load, return_exceptions=True)

            # Down for a while: /readyz says so, a push is answered "unavailable".
            await asyncio.to_thread(server.stop_server)
            down = await eventually(
                lambda: _readyz_status(http, 503), timeout=15, message="readyz says 503"
            )
            assert "database" in down["degraded"]
            assert await push_works() is None
            await asyncio.to_thread(server.start_server)
            await eventually(push_works, timeout=30, interval=0.2, message="a push works")

            cut = [m for m in messages if not any(known in m for known in CUT_MESSAGES)]
            assert not cut, f"requests cut by the outage were answered {sorted(set(cut))}"
            await eventually(
                lambda: _readyz_status(http, 200), timeout=30, message="readyz says 200"
            )
            after = await _push(conn)
            await _event_for(sub, after)  # the subscription from before the restarts
            await eventually(
                lambda: after in {r.json["jobId"] for r in receiver.requests},
                timeout=20,
                message="the webhook of a push after the restarts",
            )
            assert (await http.get("/readyz")).status_code == 200
    finally:
        await conn.close()
        await sub.close()
        await http.aclose()
        await asyncio.to_thread(broker.terminate)


async def _keep_pushing(push: Callable[[], Awaitable[str | None]]) -> None:
    while True:
        if await push() is None:
            await asyncio.sleep(0.05)  # pacing while the database is away, not a wait


async def _readyz_status(http: httpx.AsyncClient, status: int) -> dict[str, Any] | None:
    try:
        response = await http.get("/readyz")
    except (httpx.HTTPError, PgQueueError):
        return None
    return dict(response.json()) if response.status_code == status else None
