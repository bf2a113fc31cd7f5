"""Webhook commands over real sockets: bunqueue's shapes and errors, the official
Python client, and a job pushed on the wire reaching a receiver, signed.

The brokers run in this process (webhooks join PostgresQueueManager and the
serve command with the engine wiring; until then the test builds the broker
with a manager that has them)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from pgqueue.client.connection import Connection
from pgqueue.errors import RemoteError
from pgqueue.maintenance.webhook_delivery import WebhookDelivery
from pgqueue.server.broker import Broker
from pgqueue.server.settings import BrokerSettings
from pgqueue.ssrf import AddressGuard
from pgqueue.testing import eventually
from tests.integration.webhooks_support import (
    FAST,
    Receiver,
    WebhookManager,
    take_over_delivery,
    webhook_config,
)


@asynccontextmanager
async def running_broker(
    dsn: str, namespace: str, broker_id: str, *, allow_private: bool
) -> AsyncIterator[Broker]:
    config = webhook_config(
        dsn,
        namespace,
        allow_private=allow_private,
        broker_id=broker_id,
        pool_min_size=1,
        pool_max_size=4,
        poll_interval_ms=50,
        run_maintenance=True,
        leader_ttl_ms=2_000,
        reaper_interval_ms=100,
    )
    manager = WebhookManager(config)
    manager.allow_private = allow_private
    broker = Broker(
        config, BrokerSettings(host="127.0.0.1", tcp_port=0, enable_http=False), manager=manager
    )
    await broker.start()
    assert manager.elector is not None
    await take_over_delivery(manager)
    service = WebhookDelivery(
        manager.ctx, manager.elector, settings=FAST, guard=AddressGuard(allow_private)
    )
    await service.start()
    try:
        yield broker
    finally:
        await service.stop()
        await broker.stop()


@asynccontextmanager
async def client(broker: Broker) -> AsyncIterator[Connection]:
    connection = await Connection.open("127.0.0.1", broker.tcp.port)
    try:
        yield connection
    finally:
        await connection.close()


@pytest.fixture
async def lenient(db_dsn: str, namespace: str) -> AsyncIterator[Broker]:
    async with running_broker(db_dsn, namespace, "lenient", allow_private=True) as broker:
        yield broker


async def test_webhooks_are_added_listed_switched_and_removed_with_bunqueues_shapes(
    lenient: Broker, db_dsn: str, namespace: str
) -> None:
    async with (
        client(lenient) as c,
        running_broker(db_dsn, namespace, "other", allow_private=True) as other,
        client(other) as c2,
    ):
        added = await c.call(
            "AddWebhook",
            {"url": "http://127.0.0.1:9/hook", "events": ["job.completed"], "secret": "k"},
        )
        data = added["data"]
        assert set(data) == {"webhookId", "url", "events", "queue", "createdAt"}
        assert (data["url"], data["events"], data["queue"]) == (
            "http://127.0.0.1:9/hook",
            ["job.completed"],
            None,
        )
        assert isinstance(data["createdAt"], float)
        hook_id = data["webhookId"]

        listed = (await c2.call("ListWebhooks"))["data"]  # another broker sees it
        [webhook] = listed["webhooks"]
        assert webhook["id"] == hook_id and webhook["enabled"] is True
        for key in ("url", "events", "queue", "createdAt", "lastTriggered", "successCount"):
            assert key in webhook
        assert "secret" not in webhook and webhook["hasSecret"] is True
        assert (listed["stats"]["total"], listed["stats"]["enabled"]) == (1, 1)

        answer = await c2.call("SetWebhookEnabled", {"id": hook_id, "enabled": False})
        assert set(answer) == {"ok", "reqId"}
        assert (await c.call("ListWebhooks"))["data"]["stats"]["enabled"] == 0
        deliveries = await c.call("ListWebhookDeliveries", {"webhookId": hook_id})
        assert deliveries["data"] == {"deliveries": []}
        assert (await c.call("RemoveWebhook", {"webhookId": hook_id}))["data"] == {"removed": True}
        assert (await c2.call("ListWebhooks"))["data"]["webhooks"] == []


@pytest.mark.parametrize(
    ("command", "fields", "error"),
    [
        ("RemoveWebhook", {"webhookId": "nope"}, "Webhook not found"),
        ("SetWebhookEnabled", {"id": "nope", "enabled": True}, "Webhook not found"),
        ("ListWebhookDeliveries", {"webhookId": "nope"}, "Webhook not found"),
        ("SetWebhookEnabled", {"id": "x", "enabled": "yes"}, "enabled must be a boolean"),
        ("AddWebhook", {"events": ["job.pushed"]}, "Webhook URL is required"),
        ("AddWebhook", {"url": "ftp://h/", "events": ["job.pushed"]}, "http or https protocol"),
        ("AddWebhook", {"url": "http://93.184.216.34/", "events": "job.pushed"}, "events must"),
        ("AddWebhook", {"url": "http://93.184.216.34/", "events": ["job.x"]}, "Unknown webhook"),
        (
            "AddWebhook",
            {"url": "http://127.0.0.1:8080/", "events": ["job.pushed"]},
            "Webhook URL is not allowed: 127.0.0.1 is a loopback address",
        ),
        (
            "AddWebhook",
            {"url": "http://[fd00::1]/", "events": ["job.pushed"]},
            "Webhook URL is not allowed: fd00::1 is a private address",
        ),
    ],
)
async def test_webhook_commands_answer_bunqueues_errors(
    db_dsn: str, namespace: str, command: str, fields: dict[str, object], error: str
) -> None:
    async with (
        running_broker(db_dsn, namespace, "strict", allow_private=False) as strict,
        client(strict) as c,
    ):
        with pytest.raises(RemoteError) as caught:
            await c.call(command, fields)
        assert error in caught.value.message
        assert (await c.call("ListWebhooks"))["data"]["webhooks"] == []


async def test_a_job_pushed_on_the_wire_reaches_the_receiver_signed(lenient: Broker) -> None:
    async with Receiver() as r, client(lenient) as c:
        added = await c.call(
            "AddWebhook",
            {"url": r.url, "events": ["job.pushed", "job.completed"], "queue": "q", "secret": "k"},
        )
        await c.call("PUSH", {"queue": "other", "name": "n", "data": 0})
        pushed = await c.call("PUSH", {"queue": "q", "name": "n", "data": {"x": 1}})
        pulled = await c.call("PULL", {"queue": "q", "owner": "w", "timeout": 5000})
        await c.call("ACK", {"id": pushed["id"], "token": pulled["token"], "result": 42})
        await eventually(lambda: len(r.requests) == 2, timeout=15)
        assert r.events() == [("job.pushed", pushed["id"]), ("job.completed", pushed["id"])]
        for request in r.requests:
            signature = hmac.new(b"k", request.body, hashlib.sha256).hexdigest()
            assert request.headers["x-webhook-signature"] == signature
        assert r.requests[1].json["data"] == 42
        hook_id = added["data"]["webhookId"]

        async def both_recorded() -> bool:
            log = await c.call("ListWebhookDeliveries", {"webhookId": hook_id})
            return [d["status"] for d in log["data"]["deliveries"]] == ["delivered"] * 2

        await eventually(both_recorded, timeout=10)
        [webhook] = (await c.call("ListWebhooks"))["data"]["webhooks"]
        assert webhook["successCount"] == 2 and webhook["lastTriggered"] is not None


async def test_the_official_python_client_manages_webhooks(lenient: Broker) -> None:
    from bunqueue import Queue

    def scenario() -> tuple[object, ...]:
        queue = Queue("q", host="127.0.0.1", port=lenient.tcp.port)
        try:
            hook_id = queue.add_webhook("http://127.0.0.1:9/hook", ["job.failed"], secret="s")
            listed = queue.list_webhooks()
            queue.set_webhook_enabled(str(hook_id), False)
            disabled = queue.list_webhooks()[0]["enabled"]
            queue.remove_webhook(str(hook_id))
            return hook_id, listed, disabled, queue.list_webhooks()
        finally:
            queue.close()

    hook_id, listed, disabled, after = await asyncio.to_thread(scenario)
    assert isinstance(hook_id, str) and hook_id
    assert [w["id"] for w in listed] == [hook_id]  # type: ignore[attr-defined]
    assert disabled is False
    assert after == []
