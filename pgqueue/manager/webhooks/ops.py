"""Webhooks: registered in the database, shared by every broker of the namespace.

A webhook is a URL, the events it wants (:data:`~pgqueue.manager.webhooks.policy.WEBHOOK_EVENTS`),
an optional queue filter and an optional signing secret.  The leader's
:class:`~pgqueue.maintenance.webhook_delivery.WebhookDelivery` turns outbox
events into deliveries and POSTs them (at least once, with retries); these
operations register, list and switch webhooks and read the delivery log.

    hook = await m.add_webhook("https://example.com/hook", ["job.completed"], secret="s3cret")
    webhooks, stats = await m.list_webhooks()
    log = await m.list_deliveries(hook.id, status="failed")

A webhook receives the events committed after its registration.  Disabling
one stops new deliveries at once and holds back its queued ones until it is
enabled again; events that happen while it is disabled are never delivered
to it.  Registration refuses URLs that reach private addresses (see
:mod:`pgqueue.ssrf`) unless ``webhook_allow_private`` is set.
"""

from __future__ import annotations

from typing import Any

from pgqueue.config import Config
from pgqueue.db.executor import Executor
from pgqueue.db.queries import Q
from pgqueue.db.retry import in_transaction
from pgqueue.errors import ValidationError
from pgqueue.ids import uuid7
from pgqueue.manager.arguments import check_bool, check_int, check_text
from pgqueue.manager.base import ManagerBase
from pgqueue.manager.context import EngineContext, InNamespace
from pgqueue.manager.forwarding import forward
from pgqueue.manager.interest import wait_out_claims
from pgqueue.manager.webhooks.models import Webhook, WebhookDelivery, WebhookStats
from pgqueue.manager.webhooks.policy import (
    EVENT_OF_OUTBOX_TYPE,
    validate_events,
    validate_queue_filter,
    validate_secret,
)
from pgqueue.ssrf import AddressGuard

STARTED = EVENT_OF_OUTBOX_TYPE["active"]  # the webhook event of a claim: job.started

__all__ = [
    "DELIVERY_STATUSES",
    "MAX_LISTED_WEBHOOKS",
    "WebhookOps",
    "allow_private_of",
]

MAX_LISTED_WEBHOOKS = 10_000
MAX_LISTED_DELIVERIES = 1_000
DELIVERY_STATUSES = ("pending", "delivering", "delivered", "failed")


def allow_private_of(config: Config) -> bool:
    """``Config.webhook_allow_private`` (False where the setting does not exist yet)."""
    return bool(getattr(config, "webhook_allow_private", False))


def _webhook_id(value: Any, field: str) -> str:
    return check_text(value, field, 256, allow_empty=False)


async def _lock_cursor(db: InNamespace) -> None:
    """Serialise with the fan-out: it may skip events only while no webhook is enabled."""
    await db.execute(Q.webhook_cursor_ensure)
    await db.fetchrow(Q.webhook_cursor_lock)


async def add_webhook(
    ctx: EngineContext,
    guard: AddressGuard,
    url: Any,
    events: Any,
    queue: Any = None,
    secret: Any = None,
) -> Webhook:
    target = await guard.check_url(url)
    wanted = validate_events(events)
    queue_filter = validate_queue_filter(queue)
    key = validate_secret(secret)
    webhook_id = uuid7()

    async def body(tx: Executor) -> Webhook:
        db = ctx.scope(tx)
        await _lock_cursor(db)
        row = await db.fetchrow(
            Q.webhook_insert,
            webhook_id=webhook_id,
            url=target.url,
            wanted=wanted,
            queue_filter=queue_filter,
            key=key,
        )
        assert row is not None
        return Webhook.from_row(row)

    webhook = await in_transaction(ctx.db, body)
    if STARTED in wanted:
        # The claims write job.started's events from now on (pgqueue.manager.interest):
        # once every claim that may have missed this webhook has ended, it starts.
        await wait_out_claims(ctx.db, Q.interest_wait)
        await ctx.scoped.execute(Q.webhook_snapshot_reset, webhook_id=webhook_id)
    return webhook


async def set_webhook_enabled(ctx: EngineContext, webhook_id: str, enabled: bool) -> bool:
    """Enable or disable a webhook; False when unknown."""
    webhook_id = _webhook_id(webhook_id, "id")
    enabled = check_bool(enabled, "enabled")

    async def body(tx: Executor) -> bool:
        db = ctx.scope(tx)
        await _lock_cursor(db)
        row = await db.fetchrow(Q.webhook_set_enabled, webhook_id=webhook_id, enabled=enabled)
        return row is not None

    found = await in_transaction(ctx.db, body)
    if found and enabled:  # its job.started events, if it wants them: as in add_webhook
        await wait_out_claims(ctx.db, Q.interest_wait)
    return found


async def remove_webhook(ctx: EngineContext, webhook_id: str) -> bool:
    """Remove a webhook with its queued deliveries and log; False when unknown."""
    webhook_id = _webhook_id(webhook_id, "webhookId")
    row = await ctx.scoped.fetchrow(Q.webhook_delete, webhook_id=webhook_id)
    return row is not None


async def list_webhooks(
    ctx: EngineContext, *, limit: int = MAX_LISTED_WEBHOOKS
) -> tuple[list[Webhook], WebhookStats]:
    """Webhooks in registration order, with totals and delivery counts."""
    limit = check_int(limit, "limit", 1, MAX_LISTED_WEBHOOKS)
    rows = await ctx.scoped.fetch(Q.webhook_list, limit=limit)
    webhooks = [Webhook.from_row(row) for row in rows]
    return webhooks, WebhookStats.of(webhooks)


async def list_deliveries(
    ctx: EngineContext, webhook_id: str, status: str | None = None, limit: int = 100
) -> list[WebhookDelivery]:
    """A webhook's delivery log, newest event first; ``status`` filters
    (pending, delivering, delivered, failed).  Raises ValidationError
    ("Webhook not found") for an unknown webhook."""
    webhook_id = _webhook_id(webhook_id, "webhookId")
    if status is not None and status not in DELIVERY_STATUSES:
        raise ValidationError(
            f"status must be one of {', '.join(DELIVERY_STATUSES)}", field="status"
        )
    limit = check_int(limit, "limit", 1, MAX_LISTED_DELIVERIES)
    rows = await ctx.scoped.fetch(
        Q.webhook_delivery_list, webhook_id=webhook_id, status=status, limit=limit
    )
    if not rows and not await ctx.scoped.fetchval(Q.webhook_exists, webhook_id=webhook_id):
        raise ValidationError("Webhook not found", field="webhookId")
    return [WebhookDelivery.from_row(row) for row in rows]


class WebhookOps(ManagerBase):
    """Register, list, switch and remove webhooks; read their delivery log."""

    def webhook_guard(self) -> AddressGuard:
        """The SSRF guard registrations go through (tests may override it)."""
        return AddressGuard(allow_private=allow_private_of(self.config))

    async def add_webhook(
        self,
        url: str,
        events: list[str],
        queue: str | None = None,
        secret: str | None = None,
    ) -> Webhook:
        """Register a webhook for ``events`` (of ``queue``, or every queue).

        Raises :class:`ValidationError` for a malformed URL, an unknown event,
        or a URL that reaches a refused address ("Webhook URL is not allowed: ...").
        """
        return await add_webhook(self.ctx, self.webhook_guard(), url, events, queue, secret)

    remove_webhook = forward(remove_webhook)
    set_webhook_enabled = forward(set_webhook_enabled)
    list_webhooks = forward(list_webhooks)
    list_deliveries = forward(list_deliveries)
