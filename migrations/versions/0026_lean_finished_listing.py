"""The finished jobs' listing index leaves the id out of its key.

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
of row pointers (deduplication): 8 bytes per job.  The queries that read finished jobs
in (finished_at, id) order (retention's oldest-first prune, the queue clean pages, a
parent's children) keep their ``ORDER BY ... f.id``: the index gives the finished_at
order and the rows of one finish statement (at most one batch) are sorted by id, so the
order is the same as before.  A cursor ``(finished_at, id) > (a, b)`` scans from
``finished_at >= a``.

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
CREATE INDEX pgqueue_finished_listing_idx ON pgqueue_finished (namespace, queue, state, finished_at);
"""

DOWNGRADE = r"""
DROP INDEX IF EXISTS pgqueue_finished_listing_idx;
CREATE INDEX pgqueue_finished_listing_idx
    ON pgqueue_finished (namespace, queue, state, finished_at, id);
"""


# An index only: older brokers' statements run unchanged.
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0026', '0022')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0026'")
    op.execute(DOWNGRADE)
