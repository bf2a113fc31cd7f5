"""A live job records when its lease was last renewed by a heartbeat.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02

The job view's ``lastHeartbeat`` was the lease deadline (``lease_until``).
``last_heartbeat_at`` is set, on the database clock, by every heartbeat that
renews a lease (JobHeartbeat(B), ExtendLock(s), the SDK worker's renewals);
the view shows it, or the claim time (``started_at``) before the first one.
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE pgqueue_jobs ADD COLUMN last_heartbeat_at timestamptz;
"""

DOWNGRADE = r"""
ALTER TABLE pgqueue_jobs DROP COLUMN IF EXISTS last_heartbeat_at;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
