"""The active jobs get one index instead of two.

Revision ID: 0032
Revises: 0029
Create Date: 2026-12-07

A claim's new row version (state ``active``) went into three b-trees: the primary key,
``pgqueue_jobs_active_idx (namespace, queue)`` (the per-queue active counts of
concurrency limits, figures, queue counts, obliterate and the active listing; 0024) and
``pgqueue_jobs_lease_idx (namespace, lease_until)`` (the reaper's expired leases; 0001),
both ``WHERE state = 'active'``.  Now one index, ``(namespace, lease_until, queue)
WHERE state = 'active'``, serves both: the reaper reads the range of expired leases in
lease order as before (its ``id`` tie-break an incremental sort, as before), and a
per-queue read checks ``queue`` inside the index over the namespace's active entries,
which stay few (the jobs in flight) and small (a claim statement's jobs share one
lease end, so the b-tree stores them as one deduplicated key).  Measured (issue 13,
docs/performance.md finding 33): ~70 WAL bytes and ~2-3 us of backend CPU less per
claimed job.

Brokers of 0029 run on it unchanged (their statements name no index).
"""

from __future__ import annotations

from alembic import op

revision = "0032"
down_revision = "0029"
branch_labels = None
depends_on = None

UPGRADE = r"""
DROP INDEX IF EXISTS pgqueue_jobs_active_idx;
DROP INDEX IF EXISTS pgqueue_jobs_lease_idx;
CREATE INDEX pgqueue_jobs_active_idx ON pgqueue_jobs (namespace, lease_until, queue)
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
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0032', '0029')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0032'")
    op.execute(DOWNGRADE)
