"""A leaner outbox: no primary key on the event id, a hash index for a job's events.

Revision ID: 0023
Revises: 0019
Create Date: 2026-12-02

Every job writes three outbox events (pushed, active, completed or failed); each
event row had three b-tree entries.  Measured on the drain (``scripts/bench_cost.py``,
pg_waldump by relation; issue 13):

* ``pgqueue_events_pkey`` (id) served only retention's delete of the rows it had
  just chosen, which now finds them through the cursor index (namespace, xid, id);
  the ids stay unique (one sequence) without it.  ~64 WAL bytes and ~22 bytes of
  disk per event.
* ``pgqueue_events_job_idx`` (namespace, job_id, id), read only by a job's timeline
  (a handful of rows, sorted after the lookup), took the most space of any index:
  a job's later events land beside its first one, so the b-tree split half-full
  pages all over (3.2 MiB for 10,000 drained jobs).  A hash index on job_id keeps a
  4-byte code per entry: 1.2 MiB, ~110 instead of ~185 WAL bytes per event.

Brokers of 0022..0019 run on this schema unchanged: their retention delete joins on
the id without the primary key, which is correct and only slower (a hash join)
until they are upgraded.
"""

from __future__ import annotations

from alembic import op

revision = "0023"
down_revision = "0019"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE pgqueue_events DROP CONSTRAINT IF EXISTS pgqueue_events_pkey;
DROP INDEX IF EXISTS pgqueue_events_job_idx;
CREATE INDEX pgqueue_events_job_idx ON pgqueue_events USING hash (job_id);
"""

DOWNGRADE = r"""
DROP INDEX IF EXISTS pgqueue_events_job_idx;
CREATE INDEX pgqueue_events_job_idx ON pgqueue_events (namespace, job_id, id);
ALTER TABLE pgqueue_events ADD CONSTRAINT pgqueue_events_pkey PRIMARY KEY (id);
"""


# Dropping an index older brokers never name; their statements run unchanged.
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0023', '0022')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0023'")
    op.execute(DOWNGRADE)
