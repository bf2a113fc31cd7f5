"""The active jobs get one index instead of two.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-07

A claim's new row version (state ``active``) went into three b-trees: the primary key,
``pgqueue_jobs_active_idx (namespace, queue)`` (the per-queue active counts of
concurrency limits, figures, queue counts, obliterate and the active listing; 0024) and
``pgqueue_jobs_lease_idx (namespace, lease_until)`` (the reaper's expired leases; 0001),
both ``WHERE state = 'active'``.  Now one index, ``(namespace, queue, lease_until)
WHERE state = 'active'``, serves both: a per-queue read is the queue's range as before,
and the reaper, once per pass, reads the namespace's active entries (the jobs in
flight) checking ``lease_until`` inside the index, then sorts the expired ones.  The
queue leads so that a claim's concurrency count on one queue never reads the other
queues' jobs in flight.  A claim statement's jobs share one queue and one lease end, so
the b-tree stores them as one deduplicated key.  Measured (issue 13,
docs/performance.md finding 34): ~70 WAL bytes and ~2-3 us of backend CPU less per
claimed job.

Brokers of 0029 run on it unchanged (their statements name no index).
"""

from __future__ import annotations

from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

UPGRADE = r"""
DROP INDEX IF EXISTS pgqueue_jobs_active_idx;
DROP INDEX IF EXISTS pgqueue_jobs_lease_idx;
CREATE INDEX pgqueue_jobs_active_idx ON pgqueue_jobs (namespace, queue, lease_until)
    WHERE state = 'active';
"""

DOWNGRADE = r"""
DROP INDEX IF EXISTS pgqueue_jobs_active_idx;
CREATE INDEX pgqueue_jobs_lease_idx ON pgqueue_jobs (namespace, lease_until)
    WHERE state = 'active';
CREATE INDEX pgqueue_jobs_active_idx ON pgqueue_jobs (namespace, queue)
    WHERE state = 'active';
"""


# Indexes only: brokers of 0029 run unchanged (0029 is the oldest that may run on 0029).
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0031', '0029')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0031'")
    op.execute(DOWNGRADE)
