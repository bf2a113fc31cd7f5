"""A broker session says when it began to drain.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

``pgqueue brokers`` lists every broker of a namespace with its session, its
heartbeat and whether it leads the maintenance.  A broker that got SIGTERM
keeps its session while it drains (requests in flight finish, jobs go back);
``draining_since`` (NULL while it serves) lets any broker, or an operator
reading the database, see that it is on its way out.
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE pgqueue_brokers ADD COLUMN draining_since timestamptz;
"""

DOWNGRADE = r"""
ALTER TABLE pgqueue_brokers DROP COLUMN IF EXISTS draining_since;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
