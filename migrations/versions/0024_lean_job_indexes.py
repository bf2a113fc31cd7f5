"""A job's claim adds no listing entry; the jobs table is packed full.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-03

Measured with ``scripts/bench_disk.py --jobs 20000`` (the peers' W2 step: 20,000 jobs
pushed in bulk, claimed and acknowledged, no VACUUM in between; issue 13):

* ``pgqueue_jobs_listing_idx`` (namespace, queue, state, created_at, id) took a second
  entry for every job at its claim (the claim is never a HOT update), inserted beside
  the job's pending entry, so its pages split half-full: 271 bytes per job, the largest
  index.  Now it leaves out the active jobs (``WHERE state <> 'active'``): 97 bytes per
  job.  The active jobs of a queue, which every per-queue active count (concurrency
  limits, figures, obliterate, queue counts) and the active listing read, get their own
  index on (namespace, queue) alone: its entries share one key per queue, which the
  b-tree stores once per page with a list of row pointers (deduplication), ~1 byte per
  job.  The active listing sorts a queue's active jobs (bounded by the workers'
  concurrency) instead of reading them in order.
* ``pgqueue_jobs`` fillfactor 80 -> 100: the 20 % kept free on each page served HOT
  updates, but a job's claim (its main update) is never HOT; the new row versions of
  claims filled some of the room, the rest stayed empty: 694 -> 602 bytes per job.
  Progress updates on a full page can no longer be HOT until page pruning frees the
  space of the job's older versions.

Brokers of 0023 and 0022 run on this schema unchanged (their statements name no index;
a count of all of a queue's live jobs reads two indexes instead of one).
"""

from __future__ import annotations

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE INDEX pgqueue_jobs_active_idx ON pgqueue_jobs (namespace, queue)
    WHERE state = 'active';
DROP INDEX IF EXISTS pgqueue_jobs_listing_idx;
CREATE INDEX pgqueue_jobs_listing_idx ON pgqueue_jobs (namespace, queue, state, created_at, id)
    WHERE state <> 'active';
ALTER TABLE pgqueue_jobs SET (fillfactor = 100);
"""

DOWNGRADE = r"""
ALTER TABLE pgqueue_jobs SET (fillfactor = 80);
DROP INDEX IF EXISTS pgqueue_jobs_listing_idx;
CREATE INDEX pgqueue_jobs_listing_idx ON pgqueue_jobs (namespace, queue, state, created_at, id);
DROP INDEX IF EXISTS pgqueue_jobs_active_idx;
"""


# Indexes and a storage parameter only: older brokers' statements run unchanged.
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0024', '0022')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0024'")
    op.execute(DOWNGRADE)
