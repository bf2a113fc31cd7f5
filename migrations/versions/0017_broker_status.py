"""A broker session reports what only that broker knows: LISTEN, projection staleness.

Revision ID: 0017
Revises: 0013
Create Date: 2026-12-02

The dashboard's cluster view (issue 17) shows every broker's wake-up path (LISTEN
or poll-only) and how far its projection lags.  Those live in each broker's memory;
``status`` (a small jsonb document, NULL until the first report) is rewritten by
the broker every session heartbeat, so any broker can show every broker's.
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0013"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE pgqueue_brokers ADD COLUMN status jsonb;
"""

DOWNGRADE = r"""
ALTER TABLE pgqueue_brokers DROP COLUMN IF EXISTS status;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
