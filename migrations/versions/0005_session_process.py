"""Broker sessions name their process precisely enough to prove it dead.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-20

``pgqueue_brokers`` already records ``hostname`` and ``pid``.  A pid alone
proves nothing across containers that share a hostname (each has its own pid
namespace) nor after the pid was reused, so a session also records:

* ``host_key``: the kernel boot id and the pid namespace of the process
  (``<boot_id>/<pid namespace>``; NULL where the platform does not tell);
* ``process_start``: the process start time in clock ticks since boot.

A new broker that finds its broker id held by a session with its own
``host_key`` whose process no longer exists (or whose pid now belongs to a
process started at another time) takes the session over at once instead of
waiting for it to go stale.
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE pgqueue_brokers ADD COLUMN host_key text, ADD COLUMN process_start bigint;
"""

DOWNGRADE = r"""
ALTER TABLE pgqueue_brokers DROP COLUMN IF EXISTS process_start,
                            DROP COLUMN IF EXISTS host_key;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
