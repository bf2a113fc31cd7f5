"""Webhooks: registrations, the delivery cursor on the outbox, the delivery log.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-08

* ``pgqueue_webhooks``: one row per registered webhook, shared by every
  broker of the namespace.  ``created_snapshot`` is the snapshot the
  registration was made in: an outbox event goes to the webhook only when
  its transaction was not yet visible then (it committed after the
  registration began), however late the delivery service reads it.
* ``pgqueue_webhook_cursor``: per namespace, the outbox position ``(xid,
  event_id)`` up to which every event has been fanned out into deliveries.
  The fan-out inserts the deliveries of a batch and advances this row in one
  transaction, so a new leader resumes exactly where the last one committed.
* ``pgqueue_webhook_deliveries``: the delivery queue and log, one row per
  (webhook, event) (unique, so a fan-out can never double a delivery).  ``id``
  is the delivery id every attempt sends (``X-Webhook-Delivery``); ``body`` the
  exact bytes POSTed (signed once, identical on every retry).  ``status``
  moves pending -> delivering -> delivered | pending (retry) | failed.  While a
  row is ``delivering``, ``next_attempt_at`` is the end of the claim's lease on
  the database clock: a broker that dies mid-delivery leaves a row that is
  due again when the lease ends, and ``lease_token`` fences the late result of
  the old claim.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE pgqueue_webhooks (
    namespace           text COLLATE "C" NOT NULL,
    id                  text COLLATE "C" NOT NULL,
    url                 text NOT NULL,
    events              text[] NOT NULL,
    queue               text COLLATE "C",
    secret              text,
    enabled             boolean NOT NULL DEFAULT true,
    created_at          timestamptz NOT NULL DEFAULT statement_timestamp(),
    created_snapshot    pg_snapshot NOT NULL DEFAULT pg_current_snapshot(),
    updated_at          timestamptz NOT NULL DEFAULT statement_timestamp(),
    last_triggered_at   timestamptz,
    success_count       bigint NOT NULL DEFAULT 0,
    failure_count       bigint NOT NULL DEFAULT 0,
    CONSTRAINT pgqueue_webhooks_pkey PRIMARY KEY (namespace, id),
    CONSTRAINT pgqueue_webhooks_events_check CHECK (cardinality(events) > 0)
);

CREATE TABLE pgqueue_webhook_cursor (
    namespace   text COLLATE "C" NOT NULL,
    xid         bigint NOT NULL,
    event_id    bigint NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT statement_timestamp(),
    CONSTRAINT pgqueue_webhook_cursor_pkey PRIMARY KEY (namespace)
);

CREATE TABLE pgqueue_webhook_deliveries (
    namespace           text COLLATE "C" NOT NULL,
    id                  text COLLATE "C" NOT NULL,
    webhook_id          text COLLATE "C" NOT NULL,
    event_id            bigint NOT NULL,
    event               text NOT NULL,
    queue               text COLLATE "C" NOT NULL,
    job_id              text COLLATE "C",
    event_at            timestamptz NOT NULL,
    body                text NOT NULL,
    status              text NOT NULL DEFAULT 'pending',
    attempts            integer NOT NULL DEFAULT 0,
    max_attempts        integer NOT NULL,
    next_attempt_at     timestamptz NOT NULL DEFAULT statement_timestamp(),
    lease_token         uuid,
    last_status_code    integer,
    last_error          text,
    created_at          timestamptz NOT NULL DEFAULT statement_timestamp(),
    last_attempt_at     timestamptz,
    delivered_at        timestamptz,
    CONSTRAINT pgqueue_webhook_deliveries_pkey PRIMARY KEY (namespace, id),
    CONSTRAINT pgqueue_webhook_deliveries_event_key UNIQUE (namespace, webhook_id, event_id),
    CONSTRAINT pgqueue_webhook_deliveries_webhook_fkey FOREIGN KEY (namespace, webhook_id)
        REFERENCES pgqueue_webhooks (namespace, id) ON DELETE CASCADE,
    CONSTRAINT pgqueue_webhook_deliveries_status_check
        CHECK (status IN ('pending', 'delivering', 'delivered', 'failed')),
    CONSTRAINT pgqueue_webhook_deliveries_attempts_check
        CHECK (attempts >= 0 AND max_attempts >= 1)
) WITH (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05
);
-- The claim: due deliveries (pending, or delivering with an expired lease).
CREATE INDEX pgqueue_webhook_deliveries_due_idx
    ON pgqueue_webhook_deliveries (namespace, next_attempt_at, id)
    WHERE status IN ('pending', 'delivering');
-- Retention of the log: finished deliveries by age.
CREATE INDEX pgqueue_webhook_deliveries_finished_idx
    ON pgqueue_webhook_deliveries (namespace, created_at)
    WHERE status IN ('delivered', 'failed');
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS pgqueue_webhook_deliveries;
DROP TABLE IF EXISTS pgqueue_webhook_cursor;
DROP TABLE IF EXISTS pgqueue_webhooks;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
