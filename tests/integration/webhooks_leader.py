"""A process that leads webhook delivery and nothing else, for the kill -9 test.

    python -m tests.integration.webhooks_leader DSN NAMESPACE BROKER_ID

It starts a manager with maintenance (leader TTL 1 s) and the webhook
delivery service (attempt timeout 5 s, lease 6 s, private addresses allowed),
prints ``ready`` and runs until it is killed.
"""

from __future__ import annotations

import asyncio
import sys

from pgqueue.maintenance.webhook_delivery import DeliverySettings, WebhookDelivery
from pgqueue.ssrf import AddressGuard
from tests.integration.webhooks_support import (
    WebhookManager,
    take_over_delivery,
    webhook_config,
)

SETTINGS = DeliverySettings(timeout_ms=5_000, lease_ms=6_000, interval_ms=20)


async def main(dsn: str, namespace: str, broker_id: str) -> None:
    manager = WebhookManager(
        webhook_config(
            dsn,
            namespace,
            allow_private=True,
            broker_id=broker_id,
            pool_min_size=1,
            pool_max_size=4,
            poll_interval_ms=50,
            run_maintenance=True,
            leader_ttl_ms=1_000,
            reaper_interval_ms=100,
        )
    )
    await manager.start()
    assert manager.elector is not None
    await take_over_delivery(manager)
    service = WebhookDelivery(
        manager.ctx, manager.elector, settings=SETTINGS, guard=AddressGuard(allow_private=True)
    )
    await service.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
