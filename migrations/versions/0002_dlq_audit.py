"""DLQ management: the audit trail, the auto-retry chain, derived schedules.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

* ``pgqueue_dlq_audit``: one row per redrive, purge, remove, auto-retry or
  expiry operation (who, when on the database clock, which jobs, why).
* ``pgqueue_jobs.dlq_*``: a job that the DLQ upkeep auto-retried carries its
  retry chain (how many auto-retries, the last one, when it first entered the
  DLQ) while it is live again, so that a new failure re-enters the DLQ with
  the chain intact and ``maxAutoRetries`` bounds it.  A manual redrive starts
  a fresh chain.
* ``pgqueue_dlq_next_retry_at`` / ``pgqueue_dlq_expires_at``: an entry's
  auto-retry schedule and expiry derive from its queue's *current* DLQ
  config, so a config change applies to the entries already there.  (The
  stored ``pgqueue_dlq.next_retry_at`` column of 0001 is left unused.)
* ``pgqueue_dlq_reason_idx``: listing and redriving by reason, in entry order.
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE pgqueue_jobs
    ADD COLUMN dlq_retry_count   integer NOT NULL DEFAULT 0,
    ADD COLUMN dlq_last_retry_at timestamptz,
    ADD COLUMN dlq_entered_at    timestamptz,
    ADD CONSTRAINT pgqueue_jobs_dlq_retry_count_check CHECK (dlq_retry_count >= 0);

CREATE INDEX pgqueue_dlq_reason_idx
    ON pgqueue_dlq (namespace, queue, reason, entered_at, job_id);

CREATE TABLE pgqueue_dlq_audit (
    id          bigserial NOT NULL,
    namespace   text COLLATE "C" NOT NULL,
    at          timestamptz NOT NULL DEFAULT statement_timestamp(),
    actor       text NOT NULL,
    action      text NOT NULL,
    queue       text COLLATE "C",
    job_ids     text[] NOT NULL DEFAULT '{}',
    filter      jsonb,
    reason      text,
    count       integer NOT NULL,
    CONSTRAINT pgqueue_dlq_audit_pkey PRIMARY KEY (id),
    CONSTRAINT pgqueue_dlq_audit_action_check
        CHECK (action IN ('redrive', 'purge', 'remove', 'auto_retry', 'expire')),
    CONSTRAINT pgqueue_dlq_audit_count_check CHECK (count >= 0)
);
CREATE INDEX pgqueue_dlq_audit_namespace_idx ON pgqueue_dlq_audit (namespace, id);
CREATE INDEX pgqueue_dlq_audit_queue_idx ON pgqueue_dlq_audit (namespace, queue, id);

-- When an entry is due for its next auto-retry under the DLQ config ``config``
-- (wire names, defaults merged): NULL when auto-retry is off or spent.  The
-- first retry is due autoRetryInterval after the entry; retry n+1 is due
-- autoRetryInterval * 2^(n-1) after retry n (the exponent stops growing at 16).
CREATE FUNCTION pgqueue_dlq_next_retry_at(
    entered_at timestamptz, retry_count integer, last_retry_at timestamptz, config jsonb
) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN coalesce((config ->> 'autoRetry')::boolean, false)
             AND retry_count < coalesce((config ->> 'maxAutoRetries')::integer, 0)
        THEN coalesce(last_retry_at, entered_at)
             + (config ->> 'autoRetryInterval')::bigint
               * power(2, least(greatest(retry_count - 1, 0), 16))::bigint
               * interval '1 millisecond'
    END;

-- When an entry expires under the DLQ config ``config``: entered_at + maxAge,
-- NULL when maxAge is null (never).
CREATE FUNCTION pgqueue_dlq_expires_at(entered_at timestamptz, config jsonb)
    RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN entered_at + (config ->> 'maxAge')::bigint * interval '1 millisecond';
"""

DOWNGRADE = r"""
DROP FUNCTION IF EXISTS pgqueue_dlq_expires_at(timestamptz, jsonb);
DROP FUNCTION IF EXISTS pgqueue_dlq_next_retry_at(timestamptz, integer, timestamptz, jsonb);
DROP TABLE IF EXISTS pgqueue_dlq_audit;
DROP INDEX IF EXISTS pgqueue_dlq_reason_idx;
ALTER TABLE pgqueue_jobs
    DROP CONSTRAINT IF EXISTS pgqueue_jobs_dlq_retry_count_check,
    DROP COLUMN IF EXISTS dlq_entered_at,
    DROP COLUMN IF EXISTS dlq_last_retry_at,
    DROP COLUMN IF EXISTS dlq_retry_count;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
