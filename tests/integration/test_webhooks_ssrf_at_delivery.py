"""Webhooks: registration refuses literal private addresses but needs no DNS answer; the
check that matters runs at delivery, on the address actually connected to.

A name's DNS answer at registration proves nothing about the answer at delivery (DNS
rebinding), and a receiver whose name is not published yet is a normal thing to
register.  So an unresolvable host is accepted when it is registered, and every
connection the delivery opens resolves once, checks every address, and connects to
an address it checked (never to a second resolution).
"""

from __future__ import annotations

import ipaddress

import pytest

from pgqueue.errors import ValidationError
from pgqueue.maintenance.webhook_delivery import deliver_once, fan_out_once
from pgqueue.maintenance.webhook_sender import WebhookSender
from pgqueue.ssrf import AddressGuard, IPAddress
from tests.integration.webhooks_support import FAST, Receiver, webhook_manager


async def test_a_host_without_dns_is_registered_and_refused_at_delivery_when_it_resolves_privately(
    db_dsn: str, namespace: str
) -> None:
    calls: list[str] = []

    async def not_yet(host: str, port: int) -> list[IPAddress]:
        raise OSError("Name or service not known")

    async def rebound(host: str, port: int) -> list[IPAddress]:
        calls.append(host)
        return [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("127.0.0.1")]

    async with Receiver() as r, webhook_manager(db_dsn, namespace, allow_private=False) as m:
        m.resolver = not_yet
        hook = await m.add_webhook(f"http://later.example:{r.port}/hook", ["job.pushed"])
        for literal in ("http://127.0.0.1/hook", "http://[::1]/hook", "http://10.0.0.7/hook"):
            with pytest.raises(ValidationError, match="not allowed"):
                await m.add_webhook(literal, ["job.pushed"])
        await m.push("q", "n", 1)
        strict = WebhookSender(AddressGuard(False, rebound), timeout_ms=2_000)
        try:
            await fan_out_once(m.ctx, FAST)
            await deliver_once(m.ctx, strict, FAST)
        finally:
            await strict.aclose()
        assert calls == ["later.example"], "one resolution per connection, checked"
        assert r.requests == []
        [entry] = await m.list_deliveries(hook.id)
        assert (entry.status, entry.attempts) == ("failed", 1)
        assert "later.example resolves to a loopback address" in (entry.last_error or "")
