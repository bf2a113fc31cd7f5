"""Webhook registrations: in the database, shared by every broker, validated, guarded."""

from __future__ import annotations

import ipaddress

import pytest

from pgqueue.errors import ValidationError
from pgqueue.maintenance.webhook_delivery import fan_out_once
from pgqueue.ssrf import IPAddress
from tests.helpers import count_rows, sql
from tests.integration.webhooks_support import FAST, webhook_manager


async def test_a_webhook_registered_on_one_broker_is_listed_by_every_broker_of_its_namespace(
    db_dsn: str, namespace: str
) -> None:
    async with (
        webhook_manager(db_dsn, namespace, broker_id="a") as a,
        webhook_manager(db_dsn, namespace, broker_id="b") as b,
        webhook_manager(db_dsn, namespace + "x", broker_id="c") as other,
    ):
        hook = await a.add_webhook(
            "https://93.184.216.34/hook", ["job.completed", "job.failed"], "emails", "s3cret"
        )
        assert (hook.url, hook.events, hook.queue, hook.has_secret, hook.enabled) == (
            "https://93.184.216.34/hook",
            ["job.completed", "job.failed"],
            "emails",
            True,
            True,
        )
        webhooks, stats = await b.list_webhooks()
        assert [w.id for w in webhooks] == [hook.id]
        assert webhooks[0].created_at == pytest.approx(hook.created_at)
        assert (stats.total, stats.enabled, stats.pending) == (1, 1, 0)
        assert "secret" not in webhooks[0].as_wire() and webhooks[0].as_wire()["hasSecret"]
        assert await other.list_webhooks() == ([], type(stats)())


async def test_disabling_enabling_and_removing_are_seen_by_every_broker(
    db_dsn: str, namespace: str
) -> None:
    async with (
        webhook_manager(db_dsn, namespace, broker_id="a") as a,
        webhook_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        hook = await a.add_webhook("http://127.0.0.1:9/hook", ["job.pushed"])
        assert await b.set_webhook_enabled(hook.id, False) is True
        [listed], stats = await a.list_webhooks()
        assert listed.enabled is False and (stats.total, stats.enabled) == (1, 0)
        assert await a.set_webhook_enabled(hook.id, True) is True
        assert (await b.list_webhooks())[1].enabled == 1
        assert await b.remove_webhook(hook.id) is True
        assert await a.list_webhooks() == ([], type(stats)())
        assert await a.remove_webhook(hook.id) is False
        assert await a.set_webhook_enabled(hook.id, True) is False
        with pytest.raises(ValidationError, match=r"^Webhook not found$"):
            await a.list_deliveries(hook.id)


@pytest.mark.parametrize(
    ("url", "events", "queue", "secret", "message"),
    [
        ("", ["job.pushed"], None, None, "Webhook URL is required"),
        ("ftp://93.184.216.34/", ["job.pushed"], None, None, "must use http or https protocol"),
        ("http://93.184.216.34/", [], None, None, "events must be a non-empty array"),
        ("http://93.184.216.34/", ["job.pushed", "job.nope"], None, None, "Unknown webhook event"),
        ("http://93.184.216.34/", ["job.pushed"], "bad queue!", None, "invalid characters"),
        ("http://93.184.216.34/", ["job.pushed"], None, "", "secret must be a non-empty string"),
        ("http://127.0.0.1:8080/", ["job.pushed"], None, None, "Webhook URL is not allowed: 127"),
        ("http://2130706433/", ["job.pushed"], None, None, "is a loopback address"),
        ("http://[::ffff:10.0.0.1]/", ["job.pushed"], None, None, "private address (IPv4"),
        ("http://localhost:6790/", ["job.pushed"], None, None, "loopback host name"),
        ("http://169.254.169.254/", ["job.pushed"], None, None, "link-local address"),
    ],
)
async def test_a_bad_registration_is_refused_and_writes_nothing(
    db_dsn: str,
    namespace: str,
    url: str,
    events: list[str],
    queue: str | None,
    secret: str | None,
    message: str,
) -> None:
    async with webhook_manager(db_dsn, namespace, allow_private=False) as m:
        with pytest.raises(ValidationError, match=message.replace("(", r"\(")):
            await m.add_webhook(url, events, queue, secret)
    assert await count_rows(db_dsn, "pgqueue_webhooks", namespace) == 0


async def test_private_addresses_are_accepted_only_when_the_setting_allows_them(
    db_dsn: str, namespace: str
) -> None:
    async with webhook_manager(db_dsn, namespace, allow_private=False) as strict:
        with pytest.raises(ValidationError, match="not allowed"):
            await strict.add_webhook("http://10.1.2.3/hook", ["job.pushed"])
        await strict.add_webhook("http://93.184.216.34/hook", ["job.pushed"])
    async with webhook_manager(db_dsn, namespace, allow_private=True) as lenient:
        await lenient.add_webhook("http://10.1.2.3/hook", ["job.pushed"])
        await lenient.add_webhook("http://localhost:8080/hook", ["job.pushed"])
    assert await count_rows(db_dsn, "pgqueue_webhooks", namespace) == 3


async def test_a_host_name_is_resolved_at_registration_and_refused_when_it_is_private(
    db_dsn: str, namespace: str
) -> None:
    answers = {"public.example": "93.184.216.34", "sneaky.example": "192.168.0.10"}

    async def resolver(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address(answers[host])]

    async with webhook_manager(db_dsn, namespace, allow_private=False) as m:
        m.resolver = resolver
        await m.add_webhook("https://public.example/hook", ["job.pushed"])
        with pytest.raises(ValidationError, match=r"sneaky\.example resolves to a private address"):
            await m.add_webhook("https://sneaky.example/hook", ["job.pushed"])


async def test_removing_a_webhook_drops_its_queued_deliveries_and_log(
    db_dsn: str, namespace: str
) -> None:
    async with webhook_manager(db_dsn, namespace) as m:
        keep = await m.add_webhook("http://127.0.0.1:9/a", ["job.pushed"])
        drop = await m.add_webhook("http://127.0.0.1:9/b", ["job.pushed"])
        await m.push("q", "n", 1)
        assert (await fan_out_once(m.ctx, FAST)).queued == 2
        assert len(await m.list_deliveries(drop.id)) == 1
        assert await m.remove_webhook(drop.id)
        rows = await sql(
            db_dsn,
            "SELECT webhook_id FROM pgqueue_webhook_deliveries WHERE namespace = $1",
            namespace,
        )
        assert [r["webhook_id"] for r in rows] == [keep.id]
