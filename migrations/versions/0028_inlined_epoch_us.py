"""The claim order's ``pgqueue_epoch_us`` inlined instead of run as a SQL function.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-03

``sort_key`` (generated: ``-lifo_seq`` or ``pgqueue_epoch_us(run_at)``) is computed for
every job row written, and ``pgqueue_epoch_us`` was ``extract(epoch FROM ts)``: the
``timestamptz`` form of ``extract`` is STABLE (some fields depend on the session time
zone), so the planner could not inline the IMMUTABLE function into the expression, and
each insert or update of a job ran it through the SQL-function executor (``fmgr_sql``:
the body read, parsed and planned once per statement).  ``perf`` of the backend of a
sequential push (``job_insert_one_known``): ``ExecComputeStoredGenerated`` 7.4 % of its
samples, ``fmgr_sql`` 6.5 % of them (docs/performance.md).  The body is now
``extract(epoch FROM ts AT TIME ZONE 'UTC')``: every function in it IMMUTABLE, so it is
inlined (one expression, no function call).  The same value (200,000 random instants
of 1742-2058, the 10,001 microseconds around the epoch, 4713 BC, 200,000 AD, in two
time zones: all equal; tests/integration/test_epoch_us.py holds 24,004 of them in three)
and the same errors (infinity, beyond bigint): the stored ``sort_key`` values and the
claim indexes stay as they are, no rewrite.

Brokers of 0027 and later run on this schema unchanged (the function's name, signature
and values are the same; 0027 is the oldest that runs on 0027).
"""

from __future__ import annotations

from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

UPGRADE = r"""
-- Microseconds since the epoch.  Every function in the body is IMMUTABLE (the
-- timestamptz form of extract is STABLE), so the planner inlines it into the claim
-- order's generated column and the claim's cut-off instead of calling it.
CREATE OR REPLACE FUNCTION pgqueue_epoch_us(ts timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN (extract(epoch FROM ts AT TIME ZONE 'UTC') * 1000000)::bigint;
"""

DOWNGRADE = r"""
CREATE OR REPLACE FUNCTION pgqueue_epoch_us(ts timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN (extract(epoch FROM ts) * 1000000)::bigint;
"""


# The same function and values: older brokers' statements run unchanged.
COMPAT = "INSERT INTO pgqueue_schema_compat (revision, oldest_broker) VALUES ('0028', '0027')"


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(COMPAT)


def downgrade() -> None:
    op.execute("DELETE FROM pgqueue_schema_compat WHERE revision = '0028'")
    op.execute(DOWNGRADE)
