"""Event prune marks: how far retention deleted each queue's outbox events.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-20

* ``pgqueue_event_prune_marks``: per (namespace, queue), the highest
  transaction id whose events retention (or ``TrimEvents``) deleted.  Each
  pass deletes a prefix of the queue's events in ``(xid, id)`` order, only of
  transactions every reader can see (below the commit-safe horizon), and
  raises the mark in the same statement.  A reader whose position counts one
  of those transactions as not seen yet gets a ``gap`` event ("events lost up
  to here") instead of silence.
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE pgqueue_event_prune_marks (
    namespace   text COLLATE "C" NOT NULL,
    queue       text COLLATE "C" NOT NULL,
    xid         bigint NOT NULL,
    pruned_at   timestamptz NOT NULL DEFAULT statement_timestamp(),
    PRIMARY KEY (namespace, queue)
);
"""

DOWNGRADE = r"""
DROP TABLE pgqueue_event_prune_marks;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
