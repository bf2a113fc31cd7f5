"""The webhook cursor is a snapshot position, like every outbox reader's.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-21

* ``pgqueue_webhook_cursor.position``: the fan-out's resume token (see
  ``pgqueue.manager.outbox``): every event of a transaction it counts as
  finished has been fanned out into deliveries.  A forgotten prepared
  transaction or an idle session no longer holds the fan-out back: it only
  stays in the token's running list.
* ``xid`` now means: every event of a transaction below it has been fanned
  out (the token's xmin); retention keeps the events at or above it.
  ``event_id`` is dropped.  An existing ``(xid, event_id)`` cursor becomes the
  token that has seen exactly what it had passed.
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE pgqueue_webhook_cursor ADD COLUMN position text;
UPDATE pgqueue_webhook_cursor c
SET position = CASE
        WHEN c.event_id = 9223372036854775807
            THEN (greatest(c.xid, 0) + 1) || ':' || (greatest(c.xid, 0) + 1) || ':'
        ELSE greatest(c.xid, 1) || ':' || greatest(c.xid, 1) || ':~'
             || (greatest(c.xid, 0) + 1) || ':' || (greatest(c.xid, 0) + 1) || ':~'
             || c.xid || '.' || c.event_id
    END,
    xid = CASE WHEN c.event_id = 9223372036854775807 THEN greatest(c.xid, 0) + 1
               ELSE greatest(c.xid, 1) END;
ALTER TABLE pgqueue_webhook_cursor ALTER COLUMN position SET NOT NULL;
ALTER TABLE pgqueue_webhook_cursor DROP COLUMN event_id;
"""

DOWNGRADE = r"""
ALTER TABLE pgqueue_webhook_cursor ADD COLUMN event_id bigint;
ALTER TABLE pgqueue_webhook_cursor RENAME COLUMN updated_at TO updated_at_0008;
ALTER TABLE pgqueue_webhook_cursor
    ADD COLUMN updated_at timestamptz NOT NULL DEFAULT statement_timestamp();
UPDATE pgqueue_webhook_cursor c
SET xid = c.xid - 1, event_id = 9223372036854775807, updated_at = c.updated_at_0008;
ALTER TABLE pgqueue_webhook_cursor ALTER COLUMN event_id SET NOT NULL;
ALTER TABLE pgqueue_webhook_cursor DROP COLUMN updated_at_0008;
ALTER TABLE pgqueue_webhook_cursor DROP COLUMN position;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
