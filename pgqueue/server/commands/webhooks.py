"""Webhook commands (bunqueue §1.6): AddWebhook, RemoveWebhook, SetWebhookEnabled,
ListWebhooks, plus pgqueue's ListWebhookDeliveries (the delivery log).

Webhooks live in PostgreSQL, so every broker of a namespace sees the same
ones (bunqueue keeps them per broker, in memory).
"""

from __future__ import annotations

from typing import Any

from pgqueue.errors import PgQueueError, ValidationError
from pgqueue.manager.webhooks.ops import WebhookOps
from pgqueue.manager.webhooks.policy import WEBHOOK_EVENTS
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request

group = CommandGroup()
command = group.command

WEBHOOK_NOT_FOUND = "Webhook not found"


def _ops(req: Request) -> WebhookOps:
    manager = req.manager
    if not isinstance(manager, WebhookOps):
        raise PgQueueError("Webhooks are not available on this broker")
    return manager


@command("AddWebhook")
async def add_webhook(req: Request) -> dict[str, Any]:
    fields = req.fields
    url = fields.get("url")
    events = fields.str_list("events", max_items=len(WEBHOOK_EVENTS) * 4, max_len=64)
    queue = fields.queue() if fields.has("queue") else None
    secret = fields.opt_str("secret", max_len=1024)
    webhook = await _ops(req).add_webhook(url, events, queue, secret)
    return {
        "data": {
            "webhookId": webhook.id,
            "url": webhook.url,
            "events": webhook.events,
            "queue": webhook.queue,
            "createdAt": webhook.created_at,
        }
    }


@command("RemoveWebhook")
async def remove_webhook(req: Request) -> dict[str, Any]:
    webhook_id = req.fields.str_("webhookId", max_len=256, non_empty=True)
    if not await _ops(req).remove_webhook(webhook_id):
        raise ValidationError(WEBHOOK_NOT_FOUND, field="webhookId")
    return {"data": {"removed": True}}


@command("SetWebhookEnabled")
async def set_webhook_enabled(req: Request) -> dict[str, Any] | None:
    webhook_id = req.fields.str_("id", max_len=256, non_empty=True)
    enabled = req.fields.bool_("enabled")
    if not await _ops(req).set_webhook_enabled(webhook_id, enabled):
        raise ValidationError(WEBHOOK_NOT_FOUND, field="id")
    return None


@command("ListWebhooks")
async def list_webhooks(req: Request) -> dict[str, Any]:
    webhooks, stats = await _ops(req).list_webhooks()
    return {"data": {"webhooks": [w.as_wire() for w in webhooks], "stats": stats.as_wire()}}


@command("ListWebhookDeliveries")
async def list_webhook_deliveries(req: Request) -> dict[str, Any]:
    """pgqueue extension: ``{webhookId, status?, limit?}`` -> D{deliveries}."""
    fields = req.fields
    webhook_id = fields.str_("webhookId", max_len=256, non_empty=True)
    status = fields.opt_str("status", max_len=32)
    limit = fields.opt_int("limit", minimum=1, maximum=1000, default=100)
    deliveries = await _ops(req).list_deliveries(webhook_id, status, limit)
    return {"data": {"deliveries": [d.as_wire() for d in deliveries]}}
