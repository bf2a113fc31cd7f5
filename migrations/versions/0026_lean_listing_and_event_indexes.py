"""Two leaner indexes: the finished listing without the id, a job's events in a b-tree.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-03

Measured with ``scripts/bench_disk.py --jobs 20000`` (the peers' W2 step: 20,000 jobs
pushed in bulk, claimed and acknowledged in batches of 100, no VACUUM; issue 13):

``pgqueue_finished_listing_idx`` on (namespace, queue, state, finished_at, id) held one
entry per finished job, ~84 bytes with its line pointer (the id is 37 bytes of it): 97
bytes per job after W2.  A finish writes every job of its statement with the same
``finished_at`` (``statement_timestamp()``), so without the id in the key the jobs one
ACK batch finished share one key, which the b-tree stores once per page with a list
of row pointers (deduplication): 8 bytes per job.  Retention's oldest-first prune and
the queue clean pages now order by finished_at alone (the jobs of one finish statement
are equally old), so a batch reads only what it takes.  What pages with a cursor
(``job_retry_completed``: ``(finished_at, id) > (a, b)``) keeps its exact order: the index
gives finished_at, then the rows of one finish statement (at most one batch) are sorted
by id, which reads that statement's rows to the end.

``pgqueue_events_job_idx``, a hash index on job_id since 0023 (read only by a job's
timeline), filled its pages about half (hash buckets split in groups): 129-157 bytes per
job after W2 for 10,000 to 40,000 jobs.  A b-tree on job_id packed full (fillfactor 100)
keeps 106-108: the ``pushed`` events arrive in id order (UUIDv7), so their pages fill up
as the b-tree grows on the right, and a job's later events (the same key) join its
first one's entry as row pointers (deduplication) instead of splitting the page half
full.  WAL of the index over the drain (pg_walinspect, 10,000 jobs, one run each): 322 -> 270 bytes
per job.  Custom ids (any string, in no order) fill a b-tree about as a hash index.

Brokers of 0022 and later run on this schema unchanged (their statements name no index).
"""

from __future__ import annotations

from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

UPGRADE = r"""
DROP INDEX IF EXISTS pgqueue_finished_listing_idx;
CREATE INDEX pgqueue_finished_listing_idx
    ON pgqueue_finished (namespace, queue, state, finished_at);
DROP INDEX IF EXISTS pgqueue_events_job_idx;
CREATE INDEX pgqueue_events_job_idx ON pgqueue_events (job_id) WITH (fillfactor = 100);
"""

DOWNGRADE = r"""
DROP INDEX IF EXISTS pgqueue_events_job_idx;
CREATE INDEX pgqueue_events_job_idx ON pgqueue_events USING hash (job_id);
DROP INDEX IF EXISTS pgqueue_finished_listing_idx;
CREATE INDEX pgqueue_finished_listing_idx
    ON pgqueue_finished (namespace, queue, state, finished_at, id);
"""


# Indexes only: older brokers' statements run unchanged.
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0026', '0022')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0026'")
    op.execute(DOWNGRADE)
